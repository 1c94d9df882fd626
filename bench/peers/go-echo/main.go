// SPDX-License-Identifier: MIT
// The Go peer of the I/O benchmark rows: a goroutine per connection over net.TCPConn (Go's
// netpoller: epoll, edge-triggered). GOMAXPROCS = --procs. -http: the minimal HTTP/1.1
// responder of the wrk row instead (as bench/tools/http_min.hpp: one fixed keep-alive response
// per request head). Prints "port N", serves until standard input closes.
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
	useHTTP := flag.Bool("http", false, "answer HTTP/1.1 requests instead of echoing")
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
				if *useHTTP {
					serveHTTP(c, buf)
					return
				}
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

const httpResponse = "HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!"

// serveHTTP answers every request head (ended by an empty line) with httpResponse.
func serveHTTP(c net.Conn, buf []byte) {
	const end = "\r\n\r\n"
	matched := 0
	var out []byte
	for {
		n, err := c.Read(buf)
		heads := 0
		for _, b := range buf[:n] {
			if b == end[matched] {
				matched++
				if matched == 4 {
					heads++
					matched = 0
				}
			} else if b == '\r' {
				matched = 1
			} else {
				matched = 0
			}
		}
		if heads > 0 {
			out = out[:0]
			for i := 0; i < heads; i++ {
				out = append(out, httpResponse...)
			}
			if _, werr := c.Write(out); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
