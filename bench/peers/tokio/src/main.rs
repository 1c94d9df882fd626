// The Tokio peer: blitz's scheduler and primitive workloads against Debian's tokio crate,
// printing one JSON object per workload (schema in ../README.md).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

const NUM_SPAWN: usize = 10_000;

fn stall() {
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(10) {
        std::thread::yield_now();
    }
}

fn spawn_many_local(rt: &tokio::runtime::Runtime) {
    let (tx, rx) = mpsc::sync_channel(1);
    let rem = Arc::new(AtomicUsize::new(NUM_SPAWN));
    rt.block_on(async {
        for _ in 0..NUM_SPAWN {
            let tx = tx.clone();
            let rem = rem.clone();
            tokio::spawn(async move {
                if rem.fetch_sub(1, Relaxed) == 1 {
                    tx.send(()).unwrap();
                }
            });
        }
        rx.recv().unwrap();
    });
}

fn spawn_remote(rt: &tokio::runtime::Runtime, n: usize) {
    let handles: Vec<_> = (0..n).map(|_| rt.spawn(async {})).collect();
    rt.block_on(async {
        for h in handles {
            h.await.unwrap();
        }
    });
}

fn yield_many(rt: &tokio::runtime::Runtime) {
    let (tx, rx) = mpsc::sync_channel(200);
    for _ in 0..200 {
        let tx = tx.clone();
        rt.spawn(async move {
            for _ in 0..1000 {
                tokio::task::yield_now().await;
            }
            tx.send(()).unwrap();
        });
    }
    for _ in 0..200 {
        rx.recv().unwrap();
    }
}

fn ping_pong(rt: &tokio::runtime::Runtime) {
    let (done_tx, done_rx) = mpsc::sync_channel(1);
    let rem = Arc::new(AtomicUsize::new(1000));
    rt.block_on(async {
        tokio::spawn(async move {
            for _ in 0..1000 {
                let rem = rem.clone();
                let done_tx = done_tx.clone();
                tokio::spawn(async move {
                    let (tx1, rx1) = tokio::sync::oneshot::channel::<()>();
                    let (tx2, rx2) = tokio::sync::oneshot::channel::<()>();
                    tokio::spawn(async move {
                        rx1.await.unwrap();
                        tx2.send(()).unwrap();
                    });
                    tx1.send(()).unwrap();
                    rx2.await.unwrap();
                    if rem.fetch_sub(1, Relaxed) == 1 {
                        done_tx.send(()).unwrap();
                    }
                });
            }
        });
        done_rx.recv().unwrap();
    });
}

fn chain(done: mpsc::SyncSender<()>, n: usize) {
    if n == 0 {
        done.send(()).unwrap();
    } else {
        tokio::spawn(async move { chain(done, n - 1) });
    }
}

fn chained_spawn(rt: &tokio::runtime::Runtime) {
    let (tx, rx) = mpsc::sync_channel(1);
    rt.block_on(async {
        tokio::spawn(async move { chain(tx, 1000) });
        rx.recv().unwrap();
    });
}

fn skynet(num: u64, size: u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let sub = size / 10;
        let hs: Vec<_> = (0..10).map(|i| tokio::spawn(skynet(num + i * sub, sub))).collect();
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    })
}

fn fib(n: u64) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>> {
    Box::pin(async move {
        if n < 2 {
            return n;
        }
        let a = tokio::spawn(fib(n - 1));
        let b = tokio::spawn(fib(n - 2));
        a.await.unwrap() + b.await.unwrap()
    })
}

fn main() {
    let mut workers = 4usize;
    let mut reps = 10usize;
    let mut filter = String::new();
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i + 1 < args.len() {
        match args[i].as_str() {
            "-workers" => workers = args[i + 1].parse().expect("-workers N"),
            "-reps" => reps = args[i + 1].parse().expect("-reps N"),
            "-filter" => filter = args[i + 1].clone(),
            other => panic!("unknown argument {}", other),
        }
        i += 2;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();

    // Background load for the busy variants, switched on around those workloads only.
    let busy = Arc::new(AtomicBool::new(false));
    type Work<'a> = (&'a str, usize, Box<dyn Fn() + 'a>);
    let rt_ref = &rt;
    let busy_ref = busy.clone();
    let all: Vec<Work> = vec![
        ("spawn_many_local", NUM_SPAWN, Box::new(move || spawn_many_local(rt_ref))),
        ("spawn_many_remote_idle", NUM_SPAWN, Box::new(move || spawn_remote(rt_ref, NUM_SPAWN))),
        ("spawn_many_remote_busy1", NUM_SPAWN, Box::new(move || spawn_remote(rt_ref, NUM_SPAWN))),
        ("spawn_many_remote_busy2", 1000, Box::new(move || spawn_remote(rt_ref, 1000))),
        ("yield_many", 200 * 1000, Box::new(move || yield_many(rt_ref))),
        ("ping_pong", 1000, Box::new(move || ping_pong(rt_ref))),
        ("chained_spawn", 1000, Box::new(move || chained_spawn(rt_ref))),
        ("skynet_1m", 1_111_111, Box::new(move || {
            assert_eq!(rt_ref.block_on(skynet(0, 1_000_000)), 499_999_500_000)
        })),
        ("fib_30", 2_692_537, Box::new(move || assert_eq!(rt_ref.block_on(fib(30)), 832_040))),
    ];
    for (name, ops, run) in &all {
        if !filter.is_empty() && !name.contains(filter.as_str()) {
            continue;
        }
        if name.ends_with("busy2") && filter.as_str() != *name {
            // Observed on the 2-vCPU development VM (2026-11-21): tokio 1.24.2 did not finish
            // this workload within 20 s (its spawn chains keep the LIFO slot busy). Run it only
            // when asked for by its exact name; report it as not run otherwise.
            println!(
                "{{\"peer\": \"tokio\", \"version\": \"1.24.2\", \"workload\": \"{}\", \"workers\": {}, \"not_run\": \"did not finish within 20 s on the development VM; run with -filter {} to try\"}}",
                name, workers, name
            );
            continue;
        }
        if name.ends_with("busy1") {
            busy_ref.store(true, Relaxed);
            for _ in 0..(2 * workers) {
                let flag = busy_ref.clone();
                rt.spawn(async move {
                    while flag.load(Relaxed) {
                        tokio::task::yield_now().await;
                        stall();
                    }
                });
            }
        } else if name.ends_with("busy2") {
            busy_ref.store(true, Relaxed);
            fn iter(flag: Arc<AtomicBool>) {
                tokio::spawn(async move {
                    if flag.load(Relaxed) {
                        stall();
                        iter(flag);
                    }
                });
            }
            for _ in 0..workers {
                let flag = busy_ref.clone();
                rt.spawn(async move { iter(flag) });
            }
        }
        run(); // warm-up
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = Instant::now();
            run();
            times.push(start.elapsed().as_nanos() as f64);
        }
        busy_ref.store(false, Relaxed);
        let list: Vec<String> = times.iter().map(|t| format!("{}", t)).collect();
        println!(
            "{{\"peer\": \"tokio\", \"version\": \"1.24.2\", \"workload\": \"{}\", \"workers\": {}, \"ops\": {}, \"reps_ns\": [{}]}}",
            name, workers, ops, list.join(", ")
        );
    }
}
