package cluster

import (
	"context"
	"log/slog"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
)

// devTokenTTL is how long a dev token lasts: longer than any drill.
const devTokenTTL = 2 * time.Hour

// Dev is the in-process devcluster as a drill Cluster. It supports no
// fault family (its regions share one process, so they cannot be killed
// or paused alone, and its links are direct), and it ignores
// Options.Policy and Options.Lease (the devcluster's endpoint is reject
// with a 30 s lease): it exists to run the pipeline end to end on a
// no-fault scenario until the process-level cluster lands.
type Dev struct {
	c *devcluster.Cluster
}

var _ Cluster = (*Dev)(nil)

// StartDev starts an in-process devcluster on free ports with a throwaway
// PostgreSQL. It is a Starter.
func StartDev(ctx context.Context, _ Options) (Cluster, error) {
	c, err := devcluster.Start(ctx, devcluster.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return &Dev{c: c}, nil
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
