package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"

	"github.com/idemcoord/idemcoord/internal/freeport"
)

// errNoPort is returned when no fixed port below the ephemeral range is
// free.
var errNoPort = errors.New("cluster: no free port below the ephemeral range")

// fixedPorts hands out loopback addresses that stay a region's across its
// restarts. They are drawn below the kernel's ephemeral port range, so no
// socket bound to port 0 (a proxy, a client, another test) can take one
// while its region is down, and never the same twice.
type fixedPorts struct {
	low  int // the ephemeral range's first port
	used map[int]bool
}

// newFixedPorts reads the ephemeral range (freeport.EphemeralLow).
func newFixedPorts() *fixedPorts {
	return &fixedPorts{low: freeport.EphemeralLow(), used: map[int]bool{}}
}

// next returns a free loopback address below the ephemeral range.
func (f *fixedPorts) next() (string, error) {
	span := min(f.low-1025, 20000)
	for range 200 {
		port := f.low - 1 - rand.IntN(span)
		if f.used[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		f.used[port] = true
		return addr, nil
	}
	return "", fmt.Errorf("%w (%d)", errNoPort, f.low)
}
