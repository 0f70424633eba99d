// Package freeport hands out free loopback TCP ports for servers that a
// test or the dev cluster starts in another process (PostgreSQL, etcd,
// Patroni, HAProxy), which must be told a port before they bind it.
//
// Asking the kernel for port 0 returns a port from its ephemeral range,
// the same range every outgoing connection takes its local port from: in
// the gap between closing the probe listener and the child's bind, a
// connection opened by any process on the machine may take the port (CI,
// stop 39: PostgreSQL "could not bind ... Address already in use" on port
// 35065). Ports picked here lie below that range, where no outgoing
// connection lands, so only another listener picking the same port in the
// same gap can collide.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Lowest is the first port Pick may return.
const Lowest = 10000

// defaultEphemeralLow is the kernel's default first ephemeral port, used
// when /proc cannot be read.
const defaultEphemeralLow = 32768

// EphemeralLow returns the first port of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range), 32768 when it cannot be read.
func EphemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return defaultEphemeralLow
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return defaultEphemeralLow
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= Lowest {
		return defaultEphemeralLow
	}
	return n
}

// Pick returns n distinct free loopback ports from [Lowest, EphemeralLow).
// Each was free a moment ago: it held a listener on every one until it had
// all n, so no two are the same.
func Pick(n int) ([]int, error) {
	top := EphemeralLow()
	ports := make([]int, 0, n)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 200*n {
			return nil, errors.New("freeport: no free loopback port below the ephemeral range after many tries")
		}
		p := Lowest + rand.IntN(top-Lowest)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken
		}
		held = append(held, l)
		ports = append(ports, p)
	}
	return ports, nil
}

// One returns one free loopback port, as Pick(1).
func One() (int, error) {
	p, err := Pick(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}
