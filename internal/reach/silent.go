package reach

import (
	"net"
	"sync"
)

// Silent is a TCP listener that accepts connections and never answers:
// the peer that hangs a process's start (a store behind a dead proxy, a
// firewall that accepts and drops). For tests.
type Silent struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  chan struct{}
}

// ListenSilent listens on a free loopback port.
func ListenSilent() (*Silent, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Silent{ln: ln, done: make(chan struct{})}
	go s.accept()
	return s, nil
}

func (s *Silent) accept() {
	defer close(s.done)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
	}
}

// Addr is the listener's host:port.
func (s *Silent) Addr() string { return s.ln.Addr().String() }

// Close stops listening and closes every held connection.
func (s *Silent) Close() {
	s.ln.Close()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}
