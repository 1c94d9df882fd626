// SPDX-License-Identifier: MIT
// The Go peer of the I/O benchmark rows: a goroutine per connection over net.TCPConn (Go's
// netpoller: epoll, edge-triggered). GOMAXPROCS = --procs. Prints "port N", serves until
// standard input closes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
)

func main() {
	procs := flag.Int("procs", 1, "GOMAXPROCS")
	port := flag.Int("port", 0, "port (0: any)")
	flag.Parse()
	runtime.GOMAXPROCS(*procs)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("port %d\n", l.Addr().(*net.TCPAddr).Port)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				c.(*net.TCPConn).SetNoDelay(true)
				buf := make([]byte, 16384)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}(c)
		}
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
	}
	fmt.Println("{}")
}
