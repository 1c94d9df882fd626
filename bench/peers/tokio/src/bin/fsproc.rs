// SPDX-License-Identifier: MIT
// The Tokio peer of the file and process rows (scripts/bench_fsproc.py), the same workloads as
// bench/tools/blitz_fsproc.cpp:
//   fsproc file_read --path P --ops N --inflight K --workers W
//     K tasks, each with its own std::fs::File on P, read N/K random 4 KiB blocks; each read is
//     a spawn_blocking job around pread (FileExt::read_at), as tokio::fs runs its operations.
//   fsproc spawn_true --ops N --inflight K --workers W
//     K tasks each run tokio::process::Command::new("/bin/true").status() until N have exited.
// Prints {"ops": N, "secs": wall, "cpu_secs": user+system, "path": ...}.
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Instant;

fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / 100.0 // USER_HZ
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).cloned().unwrap_or_default();
    let (mut path, mut ops, mut inflight, mut workers) = (String::new(), 100000u64, 64u64, 1usize);
    let mut i = 2;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "--path" => path = args[i + 1].clone(),
            "--ops" => ops = args[i + 1].parse().unwrap(),
            "--inflight" => inflight = args[i + 1].parse().unwrap(),
            "--workers" => workers = args[i + 1].parse().unwrap(),
            _ => panic!("unknown flag {}", args[i]),
        }
        i += 2;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    let cpu0 = cpu_seconds();
    let t0 = Instant::now();
    let mut done = ops;
    if mode == "file_read" {
        let blocks = std::fs::metadata(&path).unwrap().len() / 4096;
        let per = ops / inflight;
        done = per * inflight;
        rt.block_on(async move {
            let mut hs = Vec::new();
            for t in 0..inflight {
                let f = Arc::new(std::fs::File::open(&path).unwrap());
                hs.push(tokio::spawn(async move {
                    let mut x: u64 = (t + 1).wrapping_mul(0x9E3779B97F4A7C15).wrapping_add(1);
                    for _ in 0..per {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let off = (x % blocks) * 4096;
                        let f = f.clone();
                        let n = tokio::task::spawn_blocking(move || {
                            let mut buf = vec![0u8; 4096];
                            f.read_at(&mut buf, off).unwrap()
                        })
                        .await
                        .unwrap();
                        assert_eq!(n, 4096);
                    }
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
    } else if mode == "spawn_true" {
        let left = Arc::new(AtomicI64::new(ops as i64));
        rt.block_on(async move {
            let mut hs = Vec::new();
            for _ in 0..inflight {
                let left = left.clone();
                hs.push(tokio::spawn(async move {
                    while left.fetch_sub(1, Ordering::Relaxed) > 0 {
                        let st = tokio::process::Command::new("/bin/true").status().await.unwrap();
                        assert!(st.success());
                    }
                }));
            }
            for h in hs {
                h.await.unwrap();
            }
        });
    } else {
        eprintln!("usage: fsproc file_read|spawn_true [--path P] [--ops N] [--inflight K] [--workers W]");
        std::process::exit(2);
    }
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let p = if mode == "file_read" { "spawn_blocking" } else { "-" };
    println!("{{\"ops\": {}, \"secs\": {:.6}, \"cpu_secs\": {:.6}, \"path\": \"{}\"}}", done, secs, cpu, p);
}
