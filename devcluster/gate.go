package devcluster

import (
	"net"
	"sync"
)

// The gateways' listeners are bound before any region's configuration is
// written (every file lists every region's URL), and a daemon serves on
// its listener from its start on. With Options.HoldGateways they accept
// no connection until OpenGateways: `idemd dev` opens them once its state
// file is written, so a gateway that answers /healthz means the tools
// (`idemctl dev token`, every command that finds the cluster by its state
// file) find it too. A client that connects earlier waits in the
// listen backlog, and is answered as soon as the gates open.

// gate is the cluster's one gate in front of its gateways' listeners.
type gate struct {
	open chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

// lift opens the gate; later calls do nothing.
func (g *gate) lift() { g.once.Do(func() { close(g.open) }) }

// gatedListener is a listener whose Accept waits for its gate.
type gatedListener struct {
	net.Listener
	gate   *gate
	closed chan struct{}
	once   sync.Once
}

func (g *gate) wrap(ln net.Listener) net.Listener {
	return &gatedListener{Listener: ln, gate: g, closed: make(chan struct{})}
}

// Accept waits for the gate (or Close), then accepts.
func (l *gatedListener) Accept() (net.Conn, error) {
	select {
	case <-l.gate.open:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	return l.Listener.Accept()
}

// Close closes the listener and ends a wait in Accept.
func (l *gatedListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// OpenGateways lets the gateways of a cluster started with
// Options.HoldGateways accept connections. It is safe to call more than
// once, and does nothing for a cluster started without it.
func (c *Cluster) OpenGateways() {
	if c.gate != nil {
		c.gate.lift()
	}
}
