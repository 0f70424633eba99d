package testutil

import (
	"net"
	"sync"
	"testing"
)

// SilentAddr returns a loopback host:port that accepts every connection,
// reads what it is sent and never answers nor closes: what a paused
// process (SIGSTOP) looks like from outside, its kernel still accepting
// and buffering. read is closed once the first bytes of a request arrived.
// The listener and its connections live until the test ends.
func SilentAddr(t testing.TB) (addr string, read <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						once.Do(func() { close(got) })
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), got
}
