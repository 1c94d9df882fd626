// SPDX-License-Identifier: MIT
// The Go peer of the file and process rows (scripts/bench_fsproc.py), the same workloads as
// bench/tools/blitz_fsproc.cpp:
//
//	go-fsproc file_read -path P -ops N -inflight K -procs W
//	  K goroutines, each with its own *os.File on P, read N/K random 4 KiB blocks with ReadAt
//	  (a blocking pread: the runtime hands the P to another thread while it runs).
//	go-fsproc spawn_true -ops N -inflight K -procs W
//	  K goroutines each run exec.Command("/bin/true").Run() until N have exited.
//
// Prints {"ops": N, "secs": wall, "cpu_secs": user+system, "path": ...}.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func cpuSeconds() float64 {
	var u syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return float64(u.Utime.Sec+u.Stime.Sec) + float64(u.Utime.Usec+u.Stime.Usec)/1e6
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go-fsproc file_read|spawn_true [-path P] [-ops N] [-inflight K] [-procs W]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fl := flag.NewFlagSet(mode, flag.ExitOnError)
	path := fl.String("path", "", "file to read")
	ops := fl.Int64("ops", 100000, "operations")
	inflight := fl.Int64("inflight", 64, "concurrent goroutines")
	procs := fl.Int("procs", 1, "GOMAXPROCS")
	fl.Parse(os.Args[2:])
	runtime.GOMAXPROCS(*procs)
	cpu0 := cpuSeconds()
	t0 := time.Now()
	done := *ops
	var wg sync.WaitGroup
	switch mode {
	case "file_read":
		st, err := os.Stat(*path)
		if err != nil {
			panic(err)
		}
		blocks := uint64(st.Size() / 4096)
		per := *ops / *inflight
		done = per * *inflight
		for t := int64(0); t < *inflight; t++ {
			f, err := os.Open(*path)
			if err != nil {
				panic(err)
			}
			wg.Add(1)
			go func(f *os.File, seed uint64) {
				defer wg.Done()
				buf := make([]byte, 4096)
				x := seed*0x9E3779B97F4A7C15 + 1
				for i := int64(0); i < per; i++ {
					x ^= x << 13
					x ^= x >> 7
					x ^= x << 17
					if n, err := f.ReadAt(buf, int64((x%blocks)*4096)); err != nil || n != 4096 {
						panic(err)
					}
				}
			}(f, uint64(t+1))
		}
	case "spawn_true":
		var left int64 = *ops
		for t := int64(0); t < *inflight; t++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for atomic.AddInt64(&left, -1) >= 0 {
					if err := exec.Command("/bin/true").Run(); err != nil {
						panic(err)
					}
				}
			}()
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		os.Exit(2)
	}
	wg.Wait()
	p := "-"
	if mode == "file_read" {
		p = "pread in goroutines"
	}
	fmt.Printf("{\"ops\": %d, \"secs\": %.6f, \"cpu_secs\": %.6f, \"path\": \"%s\"}\n", done,
		time.Since(t0).Seconds(), cpuSeconds()-cpu0, p)
}
