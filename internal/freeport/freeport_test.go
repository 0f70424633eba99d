package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestPickedPortsAreDistinctFreeAndBelowTheEphemeralRange: every port
// Pick returns can be bound, none twice, and none lies where the kernel
// hands out local ports to outgoing connections.
func TestPickedPortsAreDistinctFreeAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := Pick(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	top := EphemeralLow()
	for _, p := range ports {
		if seen[p] {
			t.Errorf("port %d returned twice", p)
		}
		seen[p] = true
		if p < Lowest || p >= top {
			t.Errorf("port %d outside [%d, %d)", p, Lowest, top)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Errorf("port %d is not free: %v", p, err)
			continue
		}
		l.Close()
	}
}

// TestAnOutgoingConnectionNeverTakesAPickedPort: the local port of an
// outgoing connection comes from the ephemeral range, which Pick avoids.
func TestAnOutgoingConnectionNeverTakesAPickedPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	local := c.LocalAddr().(*net.TCPAddr).Port
	if local < EphemeralLow() {
		t.Skipf("the kernel gave an outgoing connection port %d, below its ephemeral range start %d", local, EphemeralLow())
	}
	p, err := One()
	if err != nil {
		t.Fatal(err)
	}
	if p >= EphemeralLow() {
		t.Errorf("One() = %d, inside the ephemeral range", p)
	}
}
