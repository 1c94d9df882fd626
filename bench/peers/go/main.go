// SPDX-License-Identifier: MIT
// The Go peer: blitz's benchmark workloads (bench/common/bench_workloads.cpp) written with
// goroutines, channels and package sync, printing one JSON object per workload (schema in
// ../README.md). Workloads Go's standard library has no counterpart for (broadcast, watch,
// barrier, notify) are not printed; the report lists them as not implemented.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

type result struct {
	Peer        string    `json:"peer"`
	Version     string    `json:"version"`
	Workload    string    `json:"workload"`
	Kind        string    `json:"kind"`
	Workers     int       `json:"workers"`
	Ops         int       `json:"ops"`
	Reps        []float64 `json:"reps_ns"`
	Samples     []float64 `json:"samples_ns,omitempty"`
	AllocsPerOp *float64  `json:"allocs_per_op,omitempty"`
	BytesPerOp  *float64  `json:"bytes_per_op,omitempty"`
}

// rep is one timed repetition: the measured part only, and for latency workloads every sample
// (ns is then their median).
type rep struct {
	ns      float64
	samples []float64
}

const numSpawn = 10000
const ops = 100000

var workers int

func since(t0 time.Time) float64 { return float64(time.Since(t0).Nanoseconds()) }

func timed(f func()) rep {
	t0 := time.Now()
	f()
	return rep{ns: since(t0)}
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// Runs body(i) in n goroutines and waits for all of them.
func parallel(n int, body func(i int)) {
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func(i int) {
			body(i)
			wg.Done()
		}(i)
	}
	wg.Wait()
}

func stall() {
	start := time.Now()
	for time.Since(start) < 10*time.Microsecond {
		runtime.Gosched()
	}
}

// ---- scheduler ------------------------------------------------------------------------------

// spawn_many_local: 10,000 goroutines started by one goroutine; the last to finish signals.
func spawnManyLocal() rep {
	t0 := time.Now()
	var rem int64 = numSpawn
	done := make(chan struct{})
	go func() {
		for i := 0; i < numSpawn; i++ {
			go func() {
				if atomic.AddInt64(&rem, -1) == 0 {
					close(done)
				}
			}()
		}
	}()
	<-done
	return rep{ns: since(t0)}
}

// Go has no remote/local distinction: the remote variants start goroutines from the
// benchmark's own goroutine and wait for all of them.
func spawnRemote(n int) rep {
	t0 := time.Now()
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() { wg.Done() }()
	}
	wg.Wait()
	return rep{ns: since(t0)}
}

func spawnRemoteBusy1() rep {
	var busy int32 = 1
	var bg sync.WaitGroup
	bg.Add(2 * workers)
	for i := 0; i < 2*workers; i++ {
		go func() {
			for atomic.LoadInt32(&busy) == 1 {
				runtime.Gosched()
				stall()
			}
			bg.Done()
		}()
	}
	r := spawnRemote(numSpawn)
	atomic.StoreInt32(&busy, 0)
	bg.Wait()
	return r
}

func spawnRemoteBusy2() rep {
	var busy int32 = 1
	var live sync.WaitGroup
	live.Add(workers)
	var link func()
	link = func() {
		if atomic.LoadInt32(&busy) == 1 {
			stall()
			go link()
		} else {
			live.Done()
		}
	}
	for i := 0; i < workers; i++ {
		go link()
	}
	r := spawnRemote(1000)
	atomic.StoreInt32(&busy, 0)
	live.Wait()
	return r
}

func yieldMany() rep {
	return timed(func() {
		parallel(200, func(int) {
			for i := 0; i < 1000; i++ {
				runtime.Gosched()
			}
		})
	})
}

// ping_pong: 1,000 rounds, each a goroutine that starts a responder and exchanges two one-value
// channels with it.
func pingPong() rep {
	t0 := time.Now()
	var rem int64 = 1000
	done := make(chan struct{})
	go func() {
		for i := 0; i < 1000; i++ {
			go func() {
				c1, c2 := make(chan struct{}, 1), make(chan struct{}, 1)
				go func() {
					<-c1
					c2 <- struct{}{}
				}()
				c1 <- struct{}{}
				<-c2
				if atomic.AddInt64(&rem, -1) == 0 {
					close(done)
				}
			}()
		}
	}()
	<-done
	return rep{ns: since(t0)}
}

func chainedSpawn() rep {
	t0 := time.Now()
	done := make(chan struct{})
	var link func(n int)
	link = func(n int) {
		if n == 0 {
			close(done)
			return
		}
		go link(n - 1)
	}
	go link(1000)
	<-done
	return rep{ns: since(t0)}
}

// ---- fork-join ------------------------------------------------------------------------------

func skynet(c chan<- int64, num, size int64) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int64, 10)
	sub := size / 10
	for i := int64(0); i < 10; i++ {
		go skynet(rc, num+i*sub, sub)
	}
	var sum int64
	for i := 0; i < 10; i++ {
		sum += <-rc
	}
	c <- sum
}

func skynet1m() rep {
	t0 := time.Now()
	c := make(chan int64, 1)
	go skynet(c, 0, 1000000)
	s := <-c
	r := rep{ns: since(t0)}
	if s != 499999500000 {
		fmt.Fprintln(os.Stderr, "skynet: wrong sum", s)
		os.Exit(1)
	}
	return r
}

func fib(n int) int {
	if n < 2 {
		return n
	}
	a, b := make(chan int, 1), make(chan int, 1)
	go func() { a <- fib(n - 1) }()
	go func() { b <- fib(n - 2) }()
	return <-a + <-b
}

func fib30() rep {
	t0 := time.Now()
	v := fib(30)
	r := rep{ns: since(t0)}
	if v != 832040 {
		fmt.Fprintln(os.Stderr, "fib: wrong value")
		os.Exit(1)
	}
	return r
}

// The benchmark's goroutine wakes a goroutine blocked on a channel after 1 ms of idleness.
// The sender is locked to its OS thread, as blitz's and Tokio's rows send from a plain thread:
// without the lock the receiver went into the sender's own P's next slot and ran on the
// sender's thread as soon as it blocked on out (a goroutine switch, no futex wake), which is
// not the wake the other rows measure (issue 45).
func wakeLatency() rep {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return wakeLatencyTask() // the same wakes, sent from this locked goroutine
}

// The wake between goroutines: the sender is an ordinary goroutine, so the receiver goes to its
// P's next slot and runs on its thread once it blocks on out (what wake_latency measured before
// its sender was locked to its thread).
func wakeLatencyTask() rep {
	var r rep
	for i := 0; i < 100; i++ {
		c := make(chan time.Time, 1)
		out := make(chan float64, 1)
		go func() { out <- since(<-c) }()
		time.Sleep(time.Millisecond)
		c <- time.Now()
		r.samples = append(r.samples, <-out)
	}
	r.ns = median(r.samples)
	return r
}

// ---- primitives -----------------------------------------------------------------------------

func mutexRow() rep {
	var m sync.Mutex
	return timed(func() {
		for i := 0; i < ops; i++ {
			m.Lock()
			m.Unlock()
		}
	})
}

func mutexContended() rep {
	var m sync.Mutex
	return timed(func() {
		parallel(4, func(int) {
			for i := 0; i < ops/4; i++ {
				m.Lock()
				m.Unlock()
			}
		})
	})
}

func rwRead() rep {
	var l sync.RWMutex
	return timed(func() {
		for i := 0; i < ops; i++ {
			l.RLock()
			l.RUnlock()
		}
	})
}

func rwWrite() rep {
	var l sync.RWMutex
	return timed(func() {
		for i := 0; i < ops; i++ {
			l.Lock()
			l.Unlock()
		}
	})
}

func rwContended() rep {
	var l sync.RWMutex
	return timed(func() {
		parallel(6, func(t int) {
			if t < 4 {
				for i := 0; i < ops/5; i++ {
					l.RLock()
					l.RUnlock()
				}
			} else {
				for i := 0; i < ops/10; i++ {
					l.Lock()
					l.Unlock()
				}
			}
		})
	})
}

// A semaphore in Go is a buffered channel: a send takes a permit, a receive returns it.
func semaphoreRow() rep {
	s := make(chan struct{}, 1)
	return timed(func() {
		for i := 0; i < ops; i++ {
			s <- struct{}{}
			<-s
		}
	})
}

func semaphoreContended() rep {
	s := make(chan struct{}, 2)
	return timed(func() {
		parallel(8, func(int) {
			for i := 0; i < ops/8; i++ {
				s <- struct{}{}
				<-s
			}
		})
	})
}

func channelSend() rep {
	c := make(chan uint64, ops)
	r := timed(func() {
		for i := 0; i < ops; i++ {
			c <- 1
		}
	})
	for i := 0; i < ops; i++ {
		<-c
	}
	return r
}

func channelRecv() rep {
	c := make(chan uint64, ops)
	for i := 0; i < ops; i++ {
		c <- 1
	}
	return timed(func() {
		for i := 0; i < ops; i++ {
			<-c
		}
	})
}

func channelRoundtrip() rep {
	c := make(chan uint64, 1024)
	return timed(func() {
		for i := 0; i < ops; i++ {
			c <- 1
			<-c
		}
	})
}

func channelMPMC() rep {
	var got uint64
	r := timed(func() {
		c := make(chan uint64, 128)
		var prod sync.WaitGroup
		prod.Add(4)
		for p := 0; p < 4; p++ {
			go func() {
				for i := 0; i < ops/4; i++ {
					c <- 1
				}
				prod.Done()
			}()
		}
		go func() {
			prod.Wait()
			close(c)
		}()
		parallel(4, func(int) {
			for v := range c {
				atomic.AddUint64(&got, v)
			}
		})
	})
	if got != ops {
		fmt.Fprintln(os.Stderr, "mpmc: a message was lost")
		os.Exit(1)
	}
	return r
}

func oneshot() rep {
	return timed(func() {
		for i := 0; i < ops; i++ {
			c := make(chan uint64, 1)
			c <- 1
			<-c
		}
	})
}

// once_cell: a sync.Once that already ran (get) and a fresh one run once (set).
func onceGet() rep {
	var once sync.Once
	var v uint64
	once.Do(func() { v = 7 })
	var sum uint64
	r := timed(func() {
		for i := 0; i < ops; i++ {
			once.Do(func() { v = 0 })
			sum += v
		}
	})
	if sum != 7*ops {
		os.Exit(1)
	}
	return r
}

var sink uint64

func onceSet() rep {
	return timed(func() {
		for i := 0; i < ops; i++ {
			var once sync.Once
			once.Do(func() { sink = uint64(i) })
		}
	})
}

// ---- timers ---------------------------------------------------------------------------------

// A timer reset to a spread-out deadline (1 ms to 100 s) and stopped, n times.
func armCancel(n int, seed uint64) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for i := 0; i < n; i++ {
		ms := 1 + (seed+uint64(i)*7919)%100000
		t.Reset(time.Duration(ms) * time.Millisecond)
		t.Stop()
	}
}

func sleepLateness(busy bool) rep {
	var stop int32
	var hogs sync.WaitGroup
	if busy {
		hogs.Add(workers)
		for i := 0; i < workers; i++ {
			go func() {
				var x uint64
				for atomic.LoadInt32(&stop) == 0 {
					for i := uint64(0); i < 20000; i++ {
						x += i
					}
					runtime.Gosched()
				}
				sink = x
				hogs.Done()
			}()
		}
	}
	var r rep
	for i := 0; i < 50; i++ {
		t0 := time.Now()
		time.Sleep(time.Millisecond)
		r.samples = append(r.samples, since(t0)-1e6)
	}
	atomic.StoreInt32(&stop, 1)
	hogs.Wait()
	r.ns = median(r.samples)
	return r
}

type workload struct {
	name string
	kind string
	ops  int
	run  func() rep
}

func main() {
	flag.IntVar(&workers, "workers", 4, "GOMAXPROCS")
	reps := flag.Int("reps", 10, "timed repetitions per workload (after one warm-up)")
	filter := flag.String("filter", "", "regular expression on workload names")
	countAllocs := flag.Bool("allocs", false, "one extra repetition counting allocations")
	flag.Parse()
	runtime.GOMAXPROCS(workers)
	re := regexp.MustCompile(*filter)
	all := []workload{
		{"spawn_many_local", "scheduler", numSpawn, spawnManyLocal},
		{"spawn_many_remote_idle", "scheduler", numSpawn, func() rep { return spawnRemote(numSpawn) }},
		{"spawn_many_remote_busy1", "scheduler", numSpawn, spawnRemoteBusy1},
		{"spawn_many_remote_busy2", "scheduler", 1000, spawnRemoteBusy2},
		{"yield_many", "scheduler", 200 * 1000, yieldMany},
		{"ping_pong", "scheduler", 1000, pingPong},
		{"chained_spawn", "scheduler", 1000, chainedSpawn},
		{"skynet_1m", "fork-join", 1111111, skynet1m},
		{"fib_30", "fork-join", 2692537, fib30},
		{"wake_latency", "latency", 1, wakeLatency},
		{"wake_latency_task", "latency", 1, wakeLatencyTask},
		{"mutex", "primitive", ops, mutexRow},
		{"mutex_contended", "primitive", ops, mutexContended},
		{"rwlock_read", "primitive", ops, rwRead},
		{"rwlock_write", "primitive", ops, rwWrite},
		{"rwlock_contended", "primitive", ops, rwContended},
		{"semaphore", "primitive", ops, semaphoreRow},
		{"semaphore_contended", "primitive", ops, semaphoreContended},
		{"channel_send", "primitive", ops, channelSend},
		{"channel_recv", "primitive", ops, channelRecv},
		{"channel_roundtrip", "primitive", ops, channelRoundtrip},
		{"channel_mpmc", "primitive", ops, channelMPMC},
		{"oneshot", "primitive", ops, oneshot},
		{"once_cell_get", "primitive", ops, onceGet},
		{"once_cell_set", "primitive", ops, onceSet},
		{"timer_insert_cancel", "timer", ops, func() rep { return timed(func() { armCancel(ops, 0) }) }},
		{"timer_churn_1m", "timer", 1000000, func() rep {
			return timed(func() { parallel(1000, func(t int) { armCancel(1000, uint64(t)*104729) }) })
		}},
		{"sleep_lateness_idle", "latency", 1, func() rep { return sleepLateness(false) }},
		{"sleep_lateness_busy", "latency", 1, func() rep { return sleepLateness(true) }},
	}
	enc := json.NewEncoder(os.Stdout)
	for _, w := range all {
		if !re.MatchString(w.name) {
			continue
		}
		w.run() // warm-up
		r := result{Peer: "go", Version: runtime.Version(), Workload: w.name, Kind: w.kind, Workers: workers, Ops: w.ops}
		for i := 0; i < *reps; i++ {
			x := w.run()
			r.Reps = append(r.Reps, x.ns)
			r.Samples = append(r.Samples, x.samples...)
		}
		if *countAllocs && w.kind != "latency" {
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			w.run()
			runtime.ReadMemStats(&m1)
			a := float64(m1.Mallocs-m0.Mallocs) / float64(w.ops)
			b := float64(m1.TotalAlloc-m0.TotalAlloc) / float64(w.ops)
			r.AllocsPerOp, r.BytesPerOp = &a, &b
		}
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
