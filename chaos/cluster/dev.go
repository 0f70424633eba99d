package cluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
)

// devTokenTTL is how long a dev token lasts: longer than any drill.
const devTokenTTL = 2 * time.Hour

// Dev is the in-process devcluster as a drill Cluster. Of the fault
// families it supports only Links, and only the upstream link (gateway ->
// payments), for every region at once since the gateways share one
// transport; its regions share one process, so they cannot be killed or
// paused alone, and their etcd and SQL links are direct. It ignores
// Options.Policy and Options.Lease (the devcluster's endpoint is reject
// with a 30 s lease). It exists to run the pipeline end to end until the
// process-level cluster lands.
type Dev struct {
	c    *devcluster.Cluster
	link *upstreamLink
}

var (
	_ Cluster = (*Dev)(nil)
	_ Links   = (*Dev)(nil)
)

// devUpstreamTimeout bounds a gateway's upstream call in the dev cluster:
// a cut link turns into an unknown outcome in seconds, not the default 10.
const devUpstreamTimeout = 3 * time.Second

// StartDev starts an in-process devcluster on free ports with a throwaway
// PostgreSQL. It is a Starter.
func StartDev(ctx context.Context, _ Options) (Cluster, error) {
	link := newUpstreamLink()
	c, err := devcluster.Start(ctx, devcluster.Options{Logger: slog.New(slog.DiscardHandler), Transport: link,
		UpstreamTimeout: devUpstreamTimeout})
	if err != nil {
		return nil, err
	}
	return &Dev{c: c, link: link}, nil
}

// Regions implements Cluster.
func (d *Dev) Regions() []Region {
	out := make([]Region, len(d.c.Regions))
	for i, r := range d.c.Regions {
		out[i] = Region{Name: r.Name, URL: r.URL}
	}
	return out
}

// Token implements Cluster.
func (d *Dev) Token(_ context.Context, subject string) (string, error) {
	return d.c.Token(subject, devTokenTTL)
}

// Tenant implements Cluster: devcluster tokens carry tenant "demo".
func (d *Dev) Tenant() string { return "demo" }

// DSN implements Cluster.
func (d *Dev) DSN() string { return d.c.DSN }

// Stop implements Cluster.
func (d *Dev) Stop(ctx context.Context) error { return d.c.Close(ctx) }

// Upstream returns the demo payments service's URL, for drills that put
// something else than the coordinator in front of it (a test proving the
// checker catches a coordinator that does not deduplicate).
func (d *Dev) Upstream() string { return d.c.PaymentsURL }

// UpstreamTimeout is the endpoint's upstream_timeout in this cluster.
func (d *Dev) UpstreamTimeout() time.Duration { return devUpstreamTimeout }
