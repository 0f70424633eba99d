package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

// upstream returns region's upstream link, or an error for a link the
// in-process cluster cannot act on alone.
func (r *Regional) upstream(region string) (*upstreamLink, error) {
	l, ok := r.links[region]
	if !ok {
		return nil, fmt.Errorf("cluster: no region %q", region)
	}
	return l, nil
}

// act runs onSQL for the SQL link and onUpstream for the upstream link;
// the etcd and peer links are direct in the in-process cluster.
func (r *Regional) act(region string, link failpoint.Link, onSQL func() error, onUpstream func(*upstreamLink)) error {
	switch link {
	case failpoint.LinkSQL:
		return onSQL()
	case failpoint.LinkUpstream:
		l, err := r.upstream(region)
		if err != nil {
			return err
		}
		onUpstream(l)
		return nil
	}
	return fmt.Errorf("%w: the in-process cluster's %s link is direct", failpoint.ErrUnsupported, link)
}

// Cut implements Links.
func (r *Regional) Cut(ctx context.Context, region string, link failpoint.Link) error {
	return r.act(region, link, func() error { return r.toxics.Cut(ctx, region, link) },
		func(l *upstreamLink) { l.set(failpoint.CutBoth, 0, 0) })
}

// Slow implements Links.
func (r *Regional) Slow(ctx context.Context, region string, link failpoint.Link, latency, jitter time.Duration) error {
	return r.act(region, link, func() error { return r.toxics.Slow(ctx, region, link, latency, jitter) },
		func(l *upstreamLink) { l.set(failpoint.Latency, latency, jitter) })
}

// Reset implements Links: for SQL the connections are reset (COMMIT
// included); upstream, requests run and their answers are lost.
func (r *Regional) Reset(ctx context.Context, region string, link failpoint.Link) error {
	return r.act(region, link, func() error { return r.toxics.Reset(ctx, region, link) },
		func(l *upstreamLink) { l.set(failpoint.ResetPeer, 0, 0) })
}

// Restore implements Links.
func (r *Regional) Restore(ctx context.Context, region string, link failpoint.Link) error {
	return r.act(region, link, func() error { return r.toxics.Restore(ctx, region, link) },
		func(l *upstreamLink) { l.set("", 0, 0) })
}
