package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

// errInjectedReset is what a reset link answers after the request went
// through: the upstream ran it, the gateway never hears how.
var errInjectedReset = errors.New("cluster: connection reset by peer (injected)")

// upstreamLink is the dev cluster's gateway -> payments link: an
// http.RoundTripper that can be cut (requests hang, never sent), slowed,
// or reset (the request runs upstream and its answer is lost). It acts on
// every region's upstream calls at once: the dev cluster's gateways share
// one transport.
type upstreamLink struct {
	base http.RoundTripper

	mu      sync.Mutex
	mode    failpoint.Kind // "" when healthy
	latency time.Duration
	jitter  time.Duration
	rng     *rand.Rand
}

var _ http.RoundTripper = (*upstreamLink)(nil)

func newUpstreamLink() *upstreamLink {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	return &upstreamLink{base: t, rng: rand.New(rand.NewPCG(1, 2))}
}

// RoundTrip implements http.RoundTripper.
func (l *upstreamLink) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	mode, delay := l.mode, l.latency
	if l.jitter > 0 {
		delay += time.Duration(l.rng.Int64N(int64(l.jitter)))
	}
	l.mu.Unlock()
	switch mode {
	case failpoint.CutBoth, failpoint.CutSQL, failpoint.CutEtcd: // a cut: nothing leaves
		<-req.Context().Done()
		return nil, req.Context().Err()
	case failpoint.Latency:
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	case failpoint.ResetPeer:
		resp, err := l.base.RoundTrip(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return nil, errInjectedReset
	}
	return l.base.RoundTrip(req)
}

func (l *upstreamLink) set(mode failpoint.Kind, latency, jitter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mode, l.latency, l.jitter = mode, latency, jitter
}

// only refuses every link but the upstream one.
func only(link failpoint.Link) error {
	if link != failpoint.LinkUpstream {
		return fmt.Errorf("%w: the dev cluster only has a %s link to act on, not %s",
			failpoint.ErrUnsupported, failpoint.LinkUpstream, link)
	}
	return nil
}

// Cut implements Links for the upstream link (every region at once).
func (d *Dev) Cut(_ context.Context, _ string, link failpoint.Link) error {
	if err := only(link); err != nil {
		return err
	}
	d.link.set(failpoint.CutBoth, 0, 0)
	return nil
}

// Slow implements Links for the upstream link (every region at once).
func (d *Dev) Slow(_ context.Context, _ string, link failpoint.Link, latency, jitter time.Duration) error {
	if err := only(link); err != nil {
		return err
	}
	d.link.set(failpoint.Latency, latency, jitter)
	return nil
}

// Reset implements Links for the upstream link (every region at once):
// requests run upstream and their answers are lost.
func (d *Dev) Reset(_ context.Context, _ string, link failpoint.Link) error {
	if err := only(link); err != nil {
		return err
	}
	d.link.set(failpoint.ResetPeer, 0, 0)
	return nil
}

// Restore implements Links.
func (d *Dev) Restore(_ context.Context, _ string, link failpoint.Link) error {
	if err := only(link); err != nil {
		return err
	}
	d.link.set("", 0, 0)
	return nil
}
