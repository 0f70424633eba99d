package failover

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"time"
)

// Prober tells a region that is down from one that may only be stalled.
// The tracker asks it once each time a region turns suspect (its last
// liveness key gone): a region that is down is failed at once, as when
// its instances leave cleanly, instead of after the confirmation delay.
//
// The confirmation delay absorbs an instance that lost its key while it
// was alive (a stall just past the lease, an etcd hiccup) and registers
// again at once. Such an instance still holds its listening socket, so a
// connection to it is accepted (a paused process's kernel accepts it
// too). Down must therefore report true only on positive evidence that
// nothing serves at the region's address: a refused connection, or one
// closed before any answer. A timeout, an HTTP answer of any status, or
// any other error is not evidence, and the confirmation delay runs as
// before (a region cut off by the network waits it out).
type Prober interface {
	// Down reports whether nothing serves at region's address now.
	Down(ctx context.Context, region string) bool
}

// PeerProbe is the Prober over the regions' peer URLs (the addresses
// other regions forward to). It opens a fresh connection to the URL's
// host; over https it completes a TLS handshake, over http it sends
// "GET /healthz" and reads the first byte of the answer. Down is true
// when the connection is refused, or closed or reset before the handshake
// or the first byte (what a TCP proxy in front of a dead process does);
// anything that answers, a timeout, or any other error is not down.
type PeerProbe struct {
	// URL returns a region's peer base URL. Required.
	URL func(region string) (string, error)
	// TLS is the client TLS configuration for https peer URLs. Default:
	// the system roots, the URL's host as server name.
	TLS *tls.Config
}

// Down implements Prober.
func (p PeerProbe) Down(ctx context.Context, region string) bool {
	base, err := p.URL(region)
	if err != nil {
		return false
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return false
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	default:
		port = "80"
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return NothingServes(ctx, err)
	}
	defer conn.Close()
	// ctx's end (its deadline too) ends the handshake, write or read.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if u.Scheme == "https" {
		cfg := &tls.Config{ServerName: u.Hostname()}
		if p.TLS != nil {
			cfg = p.TLS.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName = u.Hostname()
			}
		}
		err := tls.Client(conn, cfg).HandshakeContext(ctx)
		return err != nil && NothingServes(ctx, err)
	}
	if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u.Host); err != nil {
		return NothingServes(ctx, err)
	}
	var b [1]byte
	n, err := conn.Read(b[:])
	return n == 0 && err != nil && NothingServes(ctx, err)
}

// NothingServes reports whether err, the error of a connection or of a
// request on a fresh connection before any byte of its answer, says
// nothing serves at the address: the connection was refused, or closed or
// reset before any answer. Not when ctx ended: a probe or a request that
// timed out proves nothing. The gateway reads a failed forward the same
// way.
func NothingServes(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
