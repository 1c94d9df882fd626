// The Go peer: the scheduler, fork-join and primitive workloads of bench/ written with
// goroutines and channels, printing one JSON object per workload (schema in ../README.md).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

type result struct {
	Peer     string    `json:"peer"`
	Version  string    `json:"version"`
	Workload string    `json:"workload"`
	Workers  int       `json:"workers"`
	Ops      int       `json:"ops"`
	Reps     []float64 `json:"reps_ns"`
}

const numSpawn = 10000

// spawn_many_local: 10,000 goroutines started by one goroutine; the last to finish signals.
func spawnManyLocal() {
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
}

// spawn_many_remote_idle: started from the benchmark's own goroutine, then all awaited.
func spawnManyRemoteIdle() {
	var wg sync.WaitGroup
	wg.Add(numSpawn)
	for i := 0; i < numSpawn; i++ {
		go func() { wg.Done() }()
	}
	wg.Wait()
}

// yield_many: 200 goroutines yielding 1,000 times each.
func yieldMany() {
	var wg sync.WaitGroup
	wg.Add(200)
	for t := 0; t < 200; t++ {
		go func() {
			for i := 0; i < 1000; i++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
}

// ping_pong: 1,000 rounds, each a goroutine that starts a responder and exchanges two
// one-value channels with it.
func pingPong() {
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
}

// chained_spawn: a chain of 1,000 goroutines, each starting the next.
func chainedSpawn() {
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
}

// skynet: 10^6 leaves, fan-out 10.
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

func skynet1m() {
	c := make(chan int64, 1)
	go skynet(c, 0, 1000000)
	if s := <-c; s != 499999500000 {
		fmt.Fprintln(os.Stderr, "skynet: wrong sum", s)
		os.Exit(1)
	}
}

// fib(30), both halves in new goroutines.
func fib(n int) int {
	if n < 2 {
		return n
	}
	a, b := make(chan int, 1), make(chan int, 1)
	go func() { a <- fib(n - 1) }()
	go func() { b <- fib(n - 2) }()
	return <-a + <-b
}

func fib30() {
	if fib(30) != 832040 {
		fmt.Fprintln(os.Stderr, "fib: wrong value")
		os.Exit(1)
	}
}

// Primitives, uncontended, 10,000 operations in one goroutine.
func mutexLockUnlock() {
	var m sync.Mutex
	for i := 0; i < 10000; i++ {
		m.Lock()
		m.Unlock()
	}
}

func channelSendRecv() {
	c := make(chan uint64, 1024)
	for i := 0; i < 10000; i++ {
		c <- 1
		<-c
	}
}

type workload struct {
	name string
	ops  int
	run  func()
}

func main() {
	workers := flag.Int("workers", 4, "GOMAXPROCS")
	reps := flag.Int("reps", 10, "repetitions per workload (after one warm-up)")
	filter := flag.String("filter", "", "regular expression on workload names")
	flag.Parse()
	runtime.GOMAXPROCS(*workers)
	re := regexp.MustCompile(*filter)
	all := []workload{
		{"spawn_many_local", numSpawn, spawnManyLocal},
		{"spawn_many_remote_idle", numSpawn, spawnManyRemoteIdle},
		{"yield_many", 200 * 1000, yieldMany},
		{"ping_pong", 1000, pingPong},
		{"chained_spawn", 1000, chainedSpawn},
		{"skynet_1m", 1111111, skynet1m},
		{"fib_30", 2692537, fib30},
		{"mutex_lock_unlock", 10000, mutexLockUnlock},
		{"channel_send_recv", 10000, channelSendRecv},
	}
	enc := json.NewEncoder(os.Stdout)
	for _, w := range all {
		if !re.MatchString(w.name) {
			continue
		}
		w.run() // warm-up
		r := result{Peer: "go", Version: runtime.Version(), Workload: w.name, Workers: *workers, Ops: w.ops}
		for i := 0; i < *reps; i++ {
			start := time.Now()
			w.run()
			r.Reps = append(r.Reps, float64(time.Since(start).Nanoseconds()))
		}
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
