package failover

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// Prober tells a region that is down or cut off from etcd from one that
// may only be stalled. The tracker asks it once each time a region turns
// suspect (its last liveness key gone): a region found Down or CutOff is
// failed at once, as when its instances leave cleanly, instead of after
// the confirmation delay.
//
// The confirmation delay absorbs an instance that lost its key while it
// was alive (a stall just past the lease, an etcd hiccup) and registers
// again at once. Such an instance still holds its listening socket, so a
// connection to it is accepted (a paused process's kernel accepts it
// too). A finding other than Unproven must therefore rest on positive
// evidence: nothing serves at the region's address (a refused connection,
// or one closed before any answer), or what serves there answers that it
// cannot reach etcd (it will not register again by itself). A timeout, any
// other HTTP answer, or any other error is not evidence, and the
// confirmation delay runs as before (a paused region waits it out).
type Prober interface {
	// Probe reports what serves at region's address now.
	Probe(ctx context.Context, region string) Finding
}

// Finding is what a Prober found at a suspect region's address.
type Finding uint8

const (
	// Unproven: no evidence either way (an answer, a timeout, any other
	// error); the confirmation delay runs.
	Unproven Finding = iota
	// Down: nothing serves at the address (refused, or closed or reset
	// before any answer).
	Down
	// CutOff: the region's instance answered that it cannot reach etcd
	// (HeaderEtcd: EtcdUnreachable on /healthz; see
	// ownership.Liveness.CutOff).
	CutOff
)

// String names f as the failover metrics' result attribute does.
func (f Finding) String() string {
	switch f {
	case Down:
		return "down"
	case CutOff:
		return "cut_off"
	default:
		return "not_down"
	}
}

// HeaderEtcd is the header of an instance's /healthz answer that says,
// with the value EtcdUnreachable, that the instance knows it cannot reach
// etcd (ownership.Liveness.CutOff): its liveness key is gone or going and
// it cannot register again. The process is up: the status stays 200.
const (
	HeaderEtcd      = "Idemcoord-Etcd"
	EtcdUnreachable = "unreachable"
)

// PeerProbe is the Prober over the regions' peer URLs (the addresses
// other regions forward to). It opens a fresh connection to the URL's
// host (over https it completes a TLS handshake first), sends
// "GET /healthz" and reads the answer's head. Down when the connection is
// refused, or closed or reset before the handshake or the first byte
// (what a TCP proxy in front of a dead process does); CutOff when the
// answer carries "Idemcoord-Etcd: unreachable"; anything else that
// answers, a timeout, or any other error is Unproven.
type PeerProbe struct {
	// URL returns a region's peer base URL. Required.
	URL func(region string) (string, error)
	// TLS is the client TLS configuration for https peer URLs. Default:
	// the system roots, the URL's host as server name.
	TLS *tls.Config
}

// Probe implements Prober.
func (p PeerProbe) Probe(ctx context.Context, region string) Finding {
	base, err := p.URL(region)
	if err != nil {
		return Unproven
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return Unproven
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
	raw, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return downIf(NothingServes(ctx, err))
	}
	defer raw.Close()
	// ctx's end (its deadline too) ends the handshake, write or read.
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	defer stop()
	conn := raw
	if u.Scheme == "https" {
		cfg := &tls.Config{ServerName: u.Hostname()}
		if p.TLS != nil {
			cfg = p.TLS.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName = u.Hostname()
			}
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return downIf(NothingServes(ctx, err))
		}
		conn = tc
	}
	if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u.Host); err != nil {
		return downIf(NothingServes(ctx, err))
	}
	br := bufio.NewReader(conn)
	if _, err := br.Peek(1); err != nil {
		return downIf(NothingServes(ctx, err))
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return Unproven
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK && resp.Header.Get(HeaderEtcd) == EtcdUnreachable {
		return CutOff
	}
	return Unproven
}

// downIf is Down when nothing serves, else Unproven.
func downIf(nothingServes bool) Finding {
	if nothingServes {
		return Down
	}
	return Unproven
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
