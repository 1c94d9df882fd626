// SPDX-License-Identifier: MIT
// The Tokio peer of the I/O benchmark rows: a task per connection, read then write_all, on a
// multi-thread runtime with --workers worker threads. --http 1: the minimal HTTP/1.1 responder
// of the wrk row instead (as bench/tools/http_min.hpp: one fixed keep-alive response per
// request head). Prints "port N", serves until standard input closes.
use std::io::BufRead;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mut workers = 1usize;
    let mut port = 0u16;
    let mut http = false;
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "--workers" => workers = args[i + 1].parse().unwrap(),
            "--port" => port = args[i + 1].parse().unwrap(),
            "--http" => http = args[i + 1] != "0",
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
                if http {
                    serve_http(&mut s, &mut buf).await;
                    return;
                }
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

const HTTP_RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!";

// Answers every request head (ended by an empty line) with HTTP_RESPONSE.
async fn serve_http(s: &mut tokio::net::TcpStream, buf: &mut [u8]) {
    const END: &[u8] = b"\r\n\r\n";
    let mut matched = 0usize;
    let mut out = Vec::new();
    loop {
        let n = match s.read(buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let mut heads = 0;
        for &b in &buf[..n] {
            if b == END[matched] {
                matched += 1;
                if matched == 4 {
                    heads += 1;
                    matched = 0;
                }
            } else if b == b'\r' {
                matched = 1;
            } else {
                matched = 0;
            }
        }
        if heads > 0 {
            out.clear();
            for _ in 0..heads {
                out.extend_from_slice(HTTP_RESPONSE);
            }
            if s.write_all(&out).await.is_err() {
                return;
            }
        }
    }
}
