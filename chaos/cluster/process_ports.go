package cluster

import (
	"errors"
	"net"
	"strconv"

	"github.com/idemcoord/idemcoord/internal/freeport"
)

// errNoPort is returned when no fixed port below the ephemeral range is
// free.
var errNoPort = errors.New("cluster: no free port below the ephemeral range")

// fixedPorts hands out loopback addresses that stay a region's across its
// restarts. They are drawn below the kernel's ephemeral port range
// (freeport), so no socket bound to port 0 (a proxy, a client, another
// test) can take one while its region is down, and never the same twice.
type fixedPorts struct {
	used map[int]bool
}

func newFixedPorts() *fixedPorts { return &fixedPorts{used: map[int]bool{}} }

// next returns a free loopback address below the ephemeral range, one it
// has not handed out before.
func (f *fixedPorts) next() (string, error) {
	for range 200 {
		port, err := freeport.One()
		if err != nil {
			return "", errors.Join(errNoPort, err)
		}
		if !f.used[port] {
			f.used[port] = true
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
		}
	}
	return "", errNoPort
}
