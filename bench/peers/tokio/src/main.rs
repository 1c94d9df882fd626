// SPDX-License-Identifier: MIT
// The Tokio peer: blitz's benchmark workloads (bench/common/bench_workloads.cpp) written against
// Debian's tokio crate, printing one JSON object per workload (schema in ../README.md).
// Flags: --workers N --reps N --filter F --allocs (F: a workload name as ^name$, or a substring),
// --current-thread (the current-thread column: a current_thread runtime on the rows with a
// current-thread shape, printed as peer tokio-ct; the other rows are reported as not run).

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

// ---- allocation counting (switched on for one extra repetition only) ----------------------

struct Counting;
static COUNT_ON: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if COUNT_ON.load(Relaxed) {
            ALLOCS.fetch_add(1, Relaxed);
            BYTES.fetch_add(l.size() as u64, Relaxed);
        }
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if COUNT_ON.load(Relaxed) {
            ALLOCS.fetch_add(1, Relaxed);
            BYTES.fetch_add(n as u64, Relaxed);
        }
        System.realloc(p, l, n)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---- helpers -------------------------------------------------------------------------------

const NUM_SPAWN: usize = 10_000;
const OPS: usize = 100_000;
const BROADCAST: usize = 10_000; // the ring holds them all: no receiver lags

struct Rep {
    ns: f64,
    samples: Vec<f64>,
}

fn rep(ns: f64) -> Rep {
    Rep { ns, samples: Vec::new() }
}

fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[s.len() / 2]
}

// Times a future run by one task of the runtime (block_on runs it on the calling thread).
fn timed<F: Future<Output = ()>>(rt: &Runtime, f: F) -> Rep {
    rep(rt.block_on(async move {
        let t0 = Instant::now();
        f.await;
        ns(t0.elapsed())
    }))
}

fn stall() {
    let start = Instant::now();
    while start.elapsed() < Duration::from_micros(10) {
        std::thread::yield_now();
    }
}

// ---- scheduler (Tokio's benches/rt_multi_threaded.rs definitions) -------------------------

fn spawn_many_local(rt: &Runtime) -> Rep {
    let (tx, rx) = mpsc::sync_channel(1);
    let rem = Arc::new(AtomicUsize::new(NUM_SPAWN));
    let t0 = Instant::now();
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
    rep(ns(t0.elapsed()))
}

fn spawn_remote(rt: &Runtime, n: usize) -> Rep {
    let t0 = Instant::now();
    let handles: Vec<_> = (0..n).map(|_| rt.spawn(async {})).collect();
    rt.block_on(async {
        for h in handles {
            h.await.unwrap();
        }
    });
    rep(ns(t0.elapsed()))
}

fn spawn_many_remote_busy1(rt: &Runtime, workers: usize) -> Rep {
    let busy = Arc::new(AtomicBool::new(true));
    let bg: Vec<_> = (0..2 * workers)
        .map(|_| {
            let flag = busy.clone();
            rt.spawn(async move {
                while flag.load(Relaxed) {
                    tokio::task::yield_now().await;
                    stall();
                }
            })
        })
        .collect();
    let r = spawn_remote(rt, NUM_SPAWN);
    busy.store(false, Relaxed);
    rt.block_on(async {
        for h in bg {
            h.await.unwrap();
        }
    });
    r
}

fn busy_chain(flag: Arc<AtomicBool>, live: Arc<AtomicUsize>) {
    tokio::spawn(async move {
        if flag.load(Relaxed) {
            stall();
            busy_chain(flag, live);
        } else {
            live.fetch_sub(1, Relaxed);
        }
    });
}

fn spawn_many_remote_busy2(rt: &Runtime, workers: usize) -> Rep {
    let busy = Arc::new(AtomicBool::new(true));
    let live = Arc::new(AtomicUsize::new(workers));
    for _ in 0..workers {
        let (flag, live) = (busy.clone(), live.clone());
        rt.spawn(async move { busy_chain(flag, live) });
    }
    let r = spawn_remote(rt, 1000);
    busy.store(false, Relaxed);
    while live.load(Relaxed) != 0 {
        std::thread::yield_now();
    }
    r
}

fn yield_many(rt: &Runtime) -> Rep {
    let (tx, rx) = mpsc::sync_channel(200);
    let t0 = Instant::now();
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
    rep(ns(t0.elapsed()))
}

fn ping_pong(rt: &Runtime) -> Rep {
    let (done_tx, done_rx) = mpsc::sync_channel(1);
    let rem = Arc::new(AtomicUsize::new(1000));
    let t0 = Instant::now();
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
    rep(ns(t0.elapsed()))
}

fn chain(done: mpsc::SyncSender<()>, n: usize) {
    if n == 0 {
        done.send(()).unwrap();
    } else {
        tokio::spawn(async move { chain(done, n - 1) });
    }
}

fn chained_spawn(rt: &Runtime) -> Rep {
    let (tx, rx) = mpsc::sync_channel(1);
    let t0 = Instant::now();
    rt.block_on(async {
        tokio::spawn(async move { chain(tx, 1000) });
        rx.recv().unwrap();
    });
    rep(ns(t0.elapsed()))
}

// ---- the current-thread column (blitz's bench_workloads.cpp, issue 47) ----------------------
// A current_thread runtime runs tasks only inside block_on, so each row stays inside one
// block_on: the last task notifies the root (tokio::sync::Notify keeps a permit, as blitz's
// notify does) instead of a plain thread's channel.

struct Countdown {
    left: AtomicUsize,
    done: tokio::sync::Notify,
}

impl Countdown {
    fn new(n: usize) -> Arc<Countdown> {
        Arc::new(Countdown { left: AtomicUsize::new(n), done: tokio::sync::Notify::new() })
    }
    fn one(&self) {
        if self.left.fetch_sub(1, Relaxed) == 1 {
            self.done.notify_one();
        }
    }
}

fn spawn_many_local_ct(rt: &Runtime) -> Rep {
    let c = Countdown::new(NUM_SPAWN);
    let t0 = Instant::now();
    rt.block_on(async {
        for _ in 0..NUM_SPAWN {
            let c = c.clone();
            tokio::spawn(async move { c.one() });
        }
        c.done.notified().await;
    });
    rep(ns(t0.elapsed()))
}

fn yield_many_ct(rt: &Runtime) -> Rep {
    let c = Countdown::new(200);
    let t0 = Instant::now();
    rt.block_on(async {
        for _ in 0..200 {
            let c = c.clone();
            tokio::spawn(async move {
                for _ in 0..1000 {
                    tokio::task::yield_now().await;
                }
                c.one();
            });
        }
        c.done.notified().await;
    });
    rep(ns(t0.elapsed()))
}

fn ping_pong_ct(rt: &Runtime) -> Rep {
    let c = Countdown::new(1000);
    let t0 = Instant::now();
    rt.block_on(async {
        let spawner = c.clone();
        tokio::spawn(async move {
            for _ in 0..1000 {
                let c = spawner.clone();
                tokio::spawn(async move {
                    let (tx1, rx1) = tokio::sync::oneshot::channel::<()>();
                    let (tx2, rx2) = tokio::sync::oneshot::channel::<()>();
                    tokio::spawn(async move {
                        rx1.await.unwrap();
                        tx2.send(()).unwrap();
                    });
                    tx1.send(()).unwrap();
                    rx2.await.unwrap();
                    c.one();
                });
            }
        });
        c.done.notified().await;
    });
    rep(ns(t0.elapsed()))
}

fn chain_ct(c: Arc<Countdown>, n: usize) {
    if n == 0 {
        c.one();
    } else {
        tokio::spawn(async move { chain_ct(c, n - 1) });
    }
}

fn chained_spawn_ct(rt: &Runtime) -> Rep {
    let c = Countdown::new(1);
    let t0 = Instant::now();
    rt.block_on(async {
        let first = c.clone();
        tokio::spawn(async move { chain_ct(first, 1000) });
        c.done.notified().await;
    });
    rep(ns(t0.elapsed()))
}

fn run_ct(rt: &Runtime, name: &str) -> Option<Rep> {
    match name {
        "spawn_many_local" => Some(spawn_many_local_ct(rt)),
        "yield_many" => Some(yield_many_ct(rt)),
        "ping_pong" => Some(ping_pong_ct(rt)),
        "chained_spawn" => Some(chained_spawn_ct(rt)),
        _ => None,
    }
}

// ---- fork-join -----------------------------------------------------------------------------

fn skynet(num: u64, size: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
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

fn fib(n: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if n < 2 {
            return n;
        }
        let a = tokio::spawn(fib(n - 1));
        let b = tokio::spawn(fib(n - 2));
        a.await.unwrap() + b.await.unwrap()
    })
}

fn wake_latency(rt: &Runtime) -> Rep {
    let mut samples = Vec::new();
    for _ in 0..100 {
        let (tx, rx) = tokio::sync::oneshot::channel::<Instant>();
        let h = rt.spawn(async move {
            let sent = rx.await.unwrap();
            ns(sent.elapsed())
        });
        std::thread::sleep(Duration::from_millis(1));
        tx.send(Instant::now()).unwrap();
        samples.push(rt.block_on(h).unwrap());
    }
    Rep { ns: median(&samples), samples }
}

// The same wake from inside the runtime: a spawned task sleeps 1 ms, sends, and awaits the
// woken task (which Tokio puts in the sender's worker's LIFO slot).
fn wake_latency_task(rt: &Runtime) -> Rep {
    let samples = rt
        .block_on(rt.spawn(async {
            let mut out = Vec::new();
            for _ in 0..100 {
                let (tx, rx) = tokio::sync::oneshot::channel::<Instant>();
                let h = tokio::spawn(async move {
                    let sent = rx.await.unwrap();
                    ns(sent.elapsed())
                });
                tokio::time::sleep(Duration::from_millis(1)).await;
                tx.send(Instant::now()).unwrap();
                out.push(h.await.unwrap());
            }
            out
        }))
        .unwrap();
    Rep { ns: median(&samples), samples }
}

// ---- primitives ----------------------------------------------------------------------------

async fn join_all(hs: Vec<tokio::task::JoinHandle<()>>) {
    for h in hs {
        h.await.unwrap();
    }
}

fn primitive(rt: &Runtime, name: &str) -> Rep {
    use tokio::sync::*;
    match name {
        "mutex" => {
            let m = Mutex::new(0u64);
            timed(rt, async {
                for _ in 0..OPS {
                    *m.lock().await += 1;
                }
            })
        }
        "mutex_contended" => {
            let m = Arc::new(Mutex::new(0u64));
            timed(rt, async {
                let hs = (0..4)
                    .map(|_| {
                        let m = m.clone();
                        tokio::spawn(async move {
                            for _ in 0..OPS / 4 {
                                *m.lock().await += 1;
                            }
                        })
                    })
                    .collect();
                join_all(hs).await
            })
        }
        "rwlock_read" => {
            let l = RwLock::new(0u64);
            timed(rt, async {
                for _ in 0..OPS {
                    let _g = l.read().await;
                }
            })
        }
        "rwlock_write" => {
            let l = RwLock::new(0u64);
            timed(rt, async {
                for _ in 0..OPS {
                    *l.write().await += 1;
                }
            })
        }
        "rwlock_contended" => {
            let l = Arc::new(RwLock::new(0u64));
            timed(rt, async {
                let hs = (0..6)
                    .map(|t| {
                        let l = l.clone();
                        tokio::spawn(async move {
                            if t < 4 {
                                for _ in 0..OPS / 5 {
                                    let _g = l.read().await;
                                }
                            } else {
                                for _ in 0..OPS / 10 {
                                    *l.write().await += 1;
                                }
                            }
                        })
                    })
                    .collect();
                join_all(hs).await
            })
        }
        "semaphore" => {
            let s = Semaphore::new(1);
            timed(rt, async {
                for _ in 0..OPS {
                    let _p = s.acquire().await.unwrap();
                }
            })
        }
        "semaphore_contended" => {
            let s = Arc::new(Semaphore::new(2));
            timed(rt, async {
                let hs = (0..8)
                    .map(|_| {
                        let s = s.clone();
                        tokio::spawn(async move {
                            for _ in 0..OPS / 8 {
                                let _p = s.acquire().await.unwrap();
                            }
                        })
                    })
                    .collect();
                join_all(hs).await
            })
        }
        "channel_send" => {
            let (tx, mut rx) = mpsc::channel::<u64>(OPS);
            let r = timed(rt, async {
                for _ in 0..OPS {
                    tx.send(1).await.unwrap();
                }
            });
            rt.block_on(async {
                for _ in 0..OPS {
                    rx.recv().await.unwrap();
                }
            });
            r
        }
        "channel_recv" => {
            let (tx, mut rx) = mpsc::channel::<u64>(OPS);
            rt.block_on(async {
                for _ in 0..OPS {
                    tx.send(1).await.unwrap();
                }
            });
            timed(rt, async {
                for _ in 0..OPS {
                    rx.recv().await.unwrap();
                }
            })
        }
        "channel_roundtrip" => {
            let (tx, mut rx) = mpsc::channel::<u64>(1024);
            timed(rt, async {
                for _ in 0..OPS {
                    tx.send(1).await.unwrap();
                    rx.recv().await.unwrap();
                }
            })
        }
        "channel_mpmc" => {
            // Tokio's mpsc has one receiver: consumers share it behind tokio's Mutex, which is
            // how a Tokio user gets MPMC from the standard crate.
            let got = Arc::new(AtomicU64::new(0));
            let g = got.clone();
            let r = timed(rt, async move {
                let (tx, rx) = mpsc::channel::<u64>(128);
                let rx = Arc::new(Mutex::new(rx));
                let mut hs = Vec::new();
                for _ in 0..4 {
                    let tx = tx.clone();
                    hs.push(tokio::spawn(async move {
                        for _ in 0..OPS / 4 {
                            tx.send(1).await.unwrap();
                        }
                    }));
                }
                drop(tx);
                for _ in 0..4 {
                    let (rx, g) = (rx.clone(), g.clone());
                    hs.push(tokio::spawn(async move {
                        loop {
                            let v = rx.lock().await.recv().await;
                            match v {
                                Some(v) => g.fetch_add(v, Relaxed),
                                None => break,
                            };
                        }
                    }));
                }
                join_all(hs).await
            });
            assert_eq!(got.load(Relaxed), OPS as u64, "mpmc: a message was lost");
            r
        }
        "oneshot" => timed(rt, async {
            for _ in 0..OPS {
                let (tx, rx) = oneshot::channel::<u64>();
                tx.send(1).unwrap();
                rx.await.unwrap();
            }
        }),
        "broadcast_4rx" => {
            let got = Arc::new(AtomicU64::new(0));
            let g = got.clone();
            let r = timed(rt, async move {
                let (tx, _rx) = broadcast::channel::<u64>(16384);
                let hs: Vec<_> = (0..4)
                    .map(|_| {
                        let (mut rx, g) = (tx.subscribe(), g.clone());
                        tokio::spawn(async move {
                            let mut n = 0;
                            for _ in 0..BROADCAST {
                                if rx.recv().await.is_ok() {
                                    n += 1;
                                }
                            }
                            g.fetch_add(n, Relaxed);
                        })
                    })
                    .collect();
                for _ in 0..BROADCAST {
                    tx.send(1).unwrap();
                }
                join_all(hs).await
            });
            assert_eq!(got.load(Relaxed), 4 * BROADCAST as u64, "broadcast: a receiver missed a message");
            r
        }
        "watch" => {
            let (tx, mut rx) = watch::channel(0u64);
            timed(rt, async move {
                for i in 0..OPS {
                    tx.send(i as u64).unwrap();
                    rx.changed().await.unwrap();
                    let _ = *rx.borrow_and_update();
                }
            })
        }
        "once_cell_get" => {
            let c = OnceCell::new_with(Some(7u64));
            let mut sum = 0;
            let r = timed(rt, async {
                for _ in 0..OPS {
                    sum += *std::hint::black_box(&c).get().unwrap();
                }
            });
            assert_eq!(sum, 7 * OPS as u64);
            r
        }
        "once_cell_set" => timed(rt, async {
            for i in 0..OPS {
                let c = OnceCell::new();
                std::hint::black_box(c.set(i as u64)).unwrap();
            }
        }),
        "barrier" => {
            let b = Arc::new(Barrier::new(4));
            timed(rt, async {
                let hs = (0..4)
                    .map(|_| {
                        let b = b.clone();
                        tokio::spawn(async move {
                            for _ in 0..OPS / 4 {
                                b.wait().await;
                            }
                        })
                    })
                    .collect();
                join_all(hs).await
            })
        }
        // The reference runtime's definitions of its four published ratios (see
        // bench_workloads.cpp): try_send, oneshot try_recv, watch send + borrow, barrier of one.
        "channel_try_send" => {
            let (tx, mut rx) = mpsc::channel::<u64>(OPS);
            let r = timed(rt, async {
                for _ in 0..OPS {
                    tx.try_send(1).unwrap();
                }
            });
            let mut left = 0;
            while rx.try_recv().is_ok() {
                left += 1;
            }
            assert_eq!(left, OPS);
            r
        }
        // Tokio has no oneshot that lives in place: blitz's oneshot_cell row is held against the
        // same tokio::sync::oneshot body.
        "oneshot_try_recv" | "oneshot_cell_try_recv" => {
            timed(rt, async {
                for i in 0..OPS {
                    let (tx, mut rx) = oneshot::channel::<u64>();
                    tx.send(i as u64).unwrap();
                    std::hint::black_box(rx.try_recv().unwrap());
                }
            })
        }
        "watch_send_borrow" => {
            let (tx, rx) = watch::channel(0u64);
            timed(rt, async move {
                for i in 0..OPS {
                    tx.send(i as u64).unwrap();
                    std::hint::black_box(*rx.borrow());
                }
            })
        }
        "barrier_new_1" => timed(rt, async {
            for _ in 0..OPS {
                let b = Barrier::new(1);
                std::hint::black_box(b.wait().await.is_leader());
            }
        }),
        "notify" => {
            let n = Notify::new();
            timed(rt, async {
                for _ in 0..OPS {
                    n.notify_one();
                    n.notified().await;
                }
            })
        }
        "select_ready" => {
            // Both receivers hold a value; `biased;` polls in order, as blitz's select decides
            // (the first ready argument wins and the second is dropped untouched).
            let (tx1, mut rx1) = mpsc::channel::<u64>(OPS);
            let (tx2, mut rx2) = mpsc::channel::<u64>(1);
            rt.block_on(async {
                for _ in 0..OPS {
                    tx1.send(1).await.unwrap();
                }
                tx2.send(2).await.unwrap();
            });
            let mut firsts = 0usize;
            let r = timed(rt, async {
                for _ in 0..OPS {
                    tokio::select! {
                        biased;
                        _ = rx1.recv() => firsts += 1,
                        _ = rx2.recv() => {}
                    }
                }
            });
            assert!(firsts == OPS && rx2.try_recv().is_ok(), "select_ready: a loser completed");
            r
        }
        "timeout_ready" => {
            let (tx, mut rx) = mpsc::channel::<u64>(OPS);
            rt.block_on(async {
                for _ in 0..OPS {
                    tx.send(1).await.unwrap();
                }
            });
            timed(rt, async {
                for _ in 0..OPS {
                    tokio::time::timeout(Duration::from_secs(1), rx.recv()).await.unwrap();
                }
            })
        }
        _ => unreachable!(),
    }
}

// ---- timers --------------------------------------------------------------------------------

// Registers a sleep with a spread-out deadline (1 ms to 100 s) by polling it once, then drops it
// (which cancels it), n times.
async fn arm_cancel(n: usize, seed: u64) {
    for i in 0..n {
        let ms = 1 + (seed + i as u64 * 7919) % 100_000;
        let s = tokio::time::sleep(Duration::from_millis(ms));
        tokio::pin!(s);
        std::future::poll_fn(|cx| {
            let _ = s.as_mut().poll(cx);
            Poll::Ready(())
        })
        .await;
    }
}

fn sleep_lateness(rt: &Runtime, workers: usize, busy: bool) -> Rep {
    let stop = Arc::new(AtomicBool::new(false));
    let hogs: Vec<_> = (0..if busy { workers } else { 0 })
        .map(|_| {
            let stop = stop.clone();
            rt.spawn(async move {
                let mut x = 0u64;
                while !stop.load(Relaxed) {
                    for i in 0..20_000u64 {
                        x = std::hint::black_box(x + i);
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let samples = rt.block_on(async {
        let mut late = Vec::new();
        for _ in 0..50 {
            let t0 = Instant::now();
            tokio::time::sleep(Duration::from_millis(1)).await;
            late.push(ns(t0.elapsed()) - 1e6);
        }
        late
    });
    stop.store(true, Relaxed);
    rt.block_on(join_all(hogs));
    Rep { ns: median(&samples), samples }
}

// ---- main ----------------------------------------------------------------------------------

fn run(rt: &Runtime, workers: usize, name: &str) -> Rep {
    match name {
        "spawn_many_local" => spawn_many_local(rt),
        "spawn_many_remote_idle" => spawn_remote(rt, NUM_SPAWN),
        "spawn_many_remote_busy1" => spawn_many_remote_busy1(rt, workers),
        "spawn_many_remote_busy2" => spawn_many_remote_busy2(rt, workers),
        "yield_many" => yield_many(rt),
        "ping_pong" => ping_pong(rt),
        "chained_spawn" => chained_spawn(rt),
        "skynet_1m" => {
            let t0 = Instant::now();
            let sum = rt.block_on(skynet(0, 1_000_000));
            let r = rep(ns(t0.elapsed()));
            assert_eq!(sum, 499_999_500_000, "skynet: wrong sum");
            r
        }
        "fib_30" => {
            let t0 = Instant::now();
            let v = rt.block_on(fib(30));
            let r = rep(ns(t0.elapsed()));
            assert_eq!(v, 832_040, "fib: wrong value");
            r
        }
        "wake_latency" => wake_latency(rt),
        "wake_latency_task" => wake_latency_task(rt),
        "timer_insert_cancel" => timed(rt, arm_cancel(OPS, 0)),
        "timer_churn_1m" => timed(rt, async {
            let hs = (0..1000u64).map(|t| tokio::spawn(arm_cancel(1000, t * 104_729))).collect();
            join_all(hs).await
        }),
        "sleep_lateness_idle" => sleep_lateness(rt, workers, false),
        "sleep_lateness_busy" => sleep_lateness(rt, workers, true),
        other => primitive(rt, other),
    }
}

const WORKLOADS: &[(&str, &str, usize)] = &[
    ("spawn_many_local", "scheduler", NUM_SPAWN),
    ("spawn_many_remote_idle", "scheduler", NUM_SPAWN),
    ("spawn_many_remote_busy1", "scheduler", NUM_SPAWN),
    ("spawn_many_remote_busy2", "scheduler", 1000),
    ("yield_many", "scheduler", 200_000),
    ("ping_pong", "scheduler", 1000),
    ("chained_spawn", "scheduler", 1000),
    ("skynet_1m", "fork-join", 1_111_111),
    ("fib_30", "fork-join", 2_692_537),
    ("wake_latency", "latency", 1),
    ("wake_latency_task", "latency", 1),
    ("mutex", "primitive", OPS),
    ("mutex_contended", "primitive", OPS),
    ("rwlock_read", "primitive", OPS),
    ("rwlock_write", "primitive", OPS),
    ("rwlock_contended", "primitive", OPS),
    ("semaphore", "primitive", OPS),
    ("semaphore_contended", "primitive", OPS),
    ("channel_send", "primitive", OPS),
    ("channel_recv", "primitive", OPS),
    ("channel_roundtrip", "primitive", OPS),
    ("channel_mpmc", "primitive", OPS),
    ("oneshot", "primitive", OPS),
    ("broadcast_4rx", "primitive", BROADCAST),
    ("watch", "primitive", OPS),
    ("once_cell_get", "primitive", OPS),
    ("once_cell_set", "primitive", OPS),
    ("barrier", "primitive", OPS),
    ("notify", "primitive", OPS),
    ("channel_try_send", "primitive", OPS),
    ("oneshot_try_recv", "primitive", OPS),
    ("oneshot_cell_try_recv", "primitive", OPS),
    ("watch_send_borrow", "primitive", OPS),
    ("barrier_new_1", "primitive", OPS),
    ("select_ready", "primitive", OPS),
    ("timeout_ready", "primitive", OPS),
    ("timer_insert_cancel", "timer", OPS),
    ("timer_churn_1m", "timer", 1_000_000),
    ("sleep_lateness_idle", "latency", 1),
    ("sleep_lateness_busy", "latency", 1),
];

// One more repetition of `f` with allocation counting on: the JSON fields per op.
fn allocs_fields<F: FnMut()>(ops: usize, mut f: F) -> String {
    let (a0, b0) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
    COUNT_ON.store(true, Relaxed);
    f();
    COUNT_ON.store(false, Relaxed);
    let (a1, b1) = (ALLOCS.load(Relaxed), BYTES.load(Relaxed));
    format!(
        ",\"allocs_per_op\":{:.4},\"bytes_per_op\":{:.1}",
        (a1 - a0) as f64 / ops as f64,
        (b1 - b0) as f64 / ops as f64
    )
}

fn numbers(v: &[f64]) -> String {
    v.iter().map(|x| format!("{:.0}", x)).collect::<Vec<_>>().join(",")
}

fn main() {
    let mut workers = 4usize;
    let mut reps = 10usize;
    let mut filter = String::new();
    let mut count_allocs = false;
    let mut force = false;
    let mut current_thread = false;
    let args: Vec<String> = std::env::args().collect();
    let mut i = 1;
    while i < args.len() {
        let flag = args[i].trim_start_matches('-');
        if flag == "allocs" || flag == "force" || flag == "current-thread" {
            count_allocs |= flag == "allocs";
            force |= flag == "force";
            current_thread |= flag == "current-thread";
            i += 1;
            continue;
        }
        let value = args.get(i + 1).unwrap_or_else(|| panic!("{} needs a value", args[i]));
        match flag {
            "workers" => workers = value.parse().expect("--workers N"),
            "reps" => reps = value.parse().expect("--reps N"),
            "filter" => filter = value.clone(),
            _ => panic!("unknown argument {}", args[i]),
        }
        i += 2;
    }
    let matches = |name: &str| {
        if filter.starts_with('^') && filter.ends_with('$') && filter.len() >= 2 {
            name == &filter[1..filter.len() - 1]
        } else {
            name.contains(filter.as_str())
        }
    };
    if current_thread {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        for (name, kind, ops) in WORKLOADS {
            if !matches(name) {
                continue;
            }
            // The first call is the warm-up, or says the row has no current-thread shape.
            if run_ct(&rt, name).is_none() {
                println!(
                    "{{\"peer\":\"tokio-ct\",\"workload\":\"{}\",\"kind\":\"{}\",\"workers\":{},\"not_run\":\"the current-thread column runs spawn_many_local, yield_many, ping_pong and chained_spawn only\"}}",
                    name, kind, workers
                );
                continue;
            }
            let times: Vec<f64> = (0..reps).map(|_| run_ct(&rt, name).unwrap().ns).collect();
            let mut extra = String::new();
            if count_allocs {
                extra += &allocs_fields(*ops, || {
                    run_ct(&rt, name);
                });
            }
            println!(
                "{{\"peer\":\"tokio-ct\",\"version\":\"tokio 1.24.2 (Debian librust-tokio-dev), current_thread\",\"workload\":\"{}\",\"kind\":\"{}\",\"workers\":{},\"ops\":{},\"reps_ns\":[{}]{}}}",
                name, kind, workers, ops, numbers(&times), extra
            );
        }
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .unwrap();
    for (name, kind, ops) in WORKLOADS {
        if !matches(name) {
            continue;
        }
        if *name == "spawn_many_remote_busy2" && !force {
            // tokio 1.24.2 (worker.rs, run_task) keeps running whatever lands in the LIFO slot
            // while the coop budget lasts, and spawning spends no budget: each busy chain holds
            // its worker for good, nothing reaches the injection queue, and the 1,000 remote
            // spawns never run (no progress in 120 s on the development VM). --force tries it.
            println!(
                "{{\"peer\":\"tokio\",\"version\":\"tokio 1.24.2 (Debian librust-tokio-dev)\",\"workload\":\"{}\",\"kind\":\"{}\",\"workers\":{},\"not_run\":\"never finishes with tokio 1.24.2: a worker runs its LIFO slot until the coop budget runs out and spawning spends none, so the busy chains keep every worker and the remote spawns wait forever (tokio-peer --force tries)\"}}",
                name, kind, workers
            );
            continue;
        }
        run(&rt, workers, name); // warm-up
        let mut times = Vec::new();
        let mut samples = Vec::new();
        for _ in 0..reps {
            let r = run(&rt, workers, name);
            times.push(r.ns);
            samples.extend(r.samples);
        }
        let mut extra = String::new();
        if !samples.is_empty() {
            extra += &format!(",\"samples_ns\":[{}]", numbers(&samples));
        }
        if count_allocs && *kind != "latency" {
            extra += &allocs_fields(*ops, || {
                run(&rt, workers, name);
            });
        }
        println!(
            "{{\"peer\":\"tokio\",\"version\":\"tokio 1.24.2 (Debian librust-tokio-dev)\",\"workload\":\"{}\",\"kind\":\"{}\",\"workers\":{},\"ops\":{},\"reps_ns\":[{}]{}}}",
            name, kind, workers, ops, numbers(&times), extra
        );
    }
}
