package testutil

import (
	"net"
	"testing"
)

// ClosingAddr returns a loopback host:port that accepts every connection,
// reads what it is sent and closes it without a byte of answer: what a
// TCP proxy in front of a dead process does (the drills' peer links when
// a region is killed). The listener lives until the test ends.
func ClosingAddr(t testing.TB) string {
	t.Helper()
	return RawAddr(t, func(c net.Conn) {
		defer c.Close()
		c.Read(make([]byte, 64<<10))
	})
}

// RawAddr returns a loopback host:port that accepts every connection and
// hands each to serve, in its own goroutine. The listener lives until the
// test ends.
func RawAddr(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}
