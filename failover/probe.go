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

// Prober tells a region that is down, cut off from etcd or stopped from
// one that may only have lost its lease while it runs. The tracker asks it
// once each time a region turns suspect (its last liveness key gone): a
// region found Down, CutOff or Silent is failed at once, as when its
// instances leave cleanly, instead of after the confirmation delay.
//
// The confirmation delay absorbs an instance that lost its key while it
// was running (an etcd hiccup, a stall that just ended) and registers
// again at once. Such an instance answers: its /healthz answers within a
// round trip. A finding other than Unproven must therefore rest on
// evidence that nothing running will register again: nothing serves at
// the region's address (a refused connection, or one closed before any
// answer); what serves there answers that it cannot reach etcd (it will
// not register again by itself); or the address accepts the connection
// (a stopped process's kernel does) and nothing answers within a silence
// window (PeerProbe.Silence plus two connect times) while the lease is
// already gone, which a running process does not do. Any other answer,
// a probe that runs out of time before the window ends, or any other
// error is not evidence, and the confirmation delay runs as before.
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
	// Silent: the address accepted the connection and nothing answered
	// within the silence window: the process is stopped (paused) or hung.
	Silent
)

// String names f as the failover metrics' result attribute does.
func (f Finding) String() string {
	switch f {
	case Down:
		return "down"
	case CutOff:
		return "cut_off"
	case Silent:
		return "silent"
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
// (what a TCP proxy in front of a dead process does); Silent when the
// connection was accepted and no byte of the handshake or the answer came
// within Silence plus twice the time the connection took (one round
// trip each way, so a distant region is given its round trips); CutOff
// when the answer carries "Idemcoord-Etcd: unreachable"; anything else
// that answers, the probe's context ending first, or any other error is
// Unproven.
type PeerProbe struct {
	// URL returns a region's peer base URL. Required.
	URL func(region string) (string, error)
	// TLS is the client TLS configuration for https peer URLs. Default:
	// the system roots, the URL's host as server name.
	TLS *tls.Config
	// Silence is how long, past two connect times, an accepted connection
	// may go without a byte before the region is found Silent. Default
	// (0) DefaultProbeSilence; negative never finds a region Silent. The
	// daemon sets ProbeSilenceFor its confirmation delay.
	Silence time.Duration
}

// DefaultProbeSilence is PeerProbe's default silence window past two
// connect times: ProbeSilenceFor the default confirmation delay. A
// running gateway answers /healthz from memory, within a round trip.
const DefaultProbeSilence = DefaultConfirmDelay / 2

// ProbeSilenceFor is the silence window for a PeerProbe beside a
// confirmation delay of confirm (0: DefaultConfirmDelay): half of it, so
// a silent region is failed no sooner than half the delay the operator
// chose. The tracker gives a probe the confirmation delay, at most a
// second, so a delay of more than two seconds (chosen to ride out long
// stalls) is never cut short by a silence.
func ProbeSilenceFor(confirm time.Duration) time.Duration {
	if confirm <= 0 {
		confirm = DefaultConfirmDelay
	}
	return confirm / 2
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
	start := time.Now()
	raw, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return downIf(NothingServes(ctx, err))
	}
	defer raw.Close()
	// The silence window: no byte by then (the handshake's or the
	// answer's) is Silent. ctx's end (its deadline too) ends the
	// handshake, write or read sooner, and proves nothing.
	silence := p.Silence
	if silence == 0 {
		silence = DefaultProbeSilence
	}
	var silentAt time.Time
	if silence > 0 {
		silentAt = time.Now().Add(silence + 2*time.Since(start))
		raw.SetDeadline(silentAt)
	}
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	defer stop()
	// spoke lifts the silence window once a byte came: past it, only ctx
	// bounds the probe. A deadline ctx's end set first is kept.
	spoke := func() {
		if !silentAt.IsZero() {
			raw.SetDeadline(time.Time{})
			if ctx.Err() != nil {
				raw.SetDeadline(time.Now())
			}
		}
	}
	// failed reads an error before any byte of the process's: refused or
	// closed is Down, the silence window's end Silent.
	failed := func(err error) Finding {
		if NothingServes(ctx, err) {
			return Down
		}
		var ne net.Error
		if ctx.Err() == nil && !silentAt.IsZero() && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(silentAt) {
			return Silent
		}
		return Unproven
	}
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
			return failed(err)
		}
		conn = tc
		spoke() // the process completed a handshake: it runs
	}
	if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", u.Host); err != nil {
		return failed(err)
	}
	br := bufio.NewReader(conn)
	if _, err := br.Peek(1); err != nil {
		return failed(err)
	}
	spoke()
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
