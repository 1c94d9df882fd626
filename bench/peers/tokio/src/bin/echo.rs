// SPDX-License-Identifier: MIT
// The Tokio peer of the I/O benchmark rows: a task per connection, read then write_all, on a
// multi-thread runtime with --workers worker threads. Prints "port N", serves until standard
// input closes.
use std::io::BufRead;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut workers = 1usize;
    let mut port = 0u16;
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "--workers" => workers = args[i + 1].parse().unwrap(),
            "--port" => port = args[i + 1].parse().unwrap(),
            _ => {}
        }
        i += 2;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt.block_on(TcpListener::bind(("127.0.0.1", port))).unwrap();
    println!("port {}", listener.local_addr().unwrap().port());
    rt.spawn(async move {
        loop {
            let (mut s, _) = match listener.accept().await {
                Ok(x) => x,
                Err(_) => return,
            };
            tokio::spawn(async move {
                let _ = s.set_nodelay(true);
                let mut buf = vec![0u8; 16384];
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    if s.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    for _ in std::io::stdin().lock().lines() {}
    println!("{{}}");
}
