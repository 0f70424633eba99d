//go:build drill

package main

import (
	"errors"
	"testing"
)

// TestDrillControlServesOnLoopbackOnly: the control API, which has no
// authentication, is refused any address but a loopback one.
func TestDrillControlServesOnLoopbackOnly(t *testing.T) {
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:7001", true},
		{"127.0.0.2:0", true},
		{"[::1]:7001", true},
		{"localhost:7001", true},
		{"0.0.0.0:7001", false},
		{":7001", false},
		{"[::]:7001", false},
		{"10.0.0.5:7001", false},
		{"example.com:7001", false},
	} {
		err := checkLoopback(c.addr)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, errNotLoopback)) {
			t.Errorf("checkLoopback(%q) = %v; want ok %v", c.addr, err, c.ok)
		}
	}
	if err := checkLoopback("127.0.0.1"); err == nil {
		t.Error("checkLoopback without a port accepted")
	}
}
