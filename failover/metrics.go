package failover

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// metrics are the controller's instruments:
//
//	idemcoord.failover.shards_moved   counter, by region failed over
//	idemcoord.failover.regions_failed counter of region failovers, by region
//	idemcoord.failover.region_state   gauge per region: 0 healthy, 1 suspect,
//	                                  2 failed, 3 recovering (RegionState.Value)
//	idemcoord.failover.leader         gauge: 1 while this candidate leads
//
// The tracker counts its down probes itself (NewTracker):
//
//	idemcoord.failover.down_probes    counter, by watched_region and
//	                                  result (down, cut_off, silent, not_down)
type metrics struct {
	moved, regions metric.Int64Counter
	lead           atomic.Int64
}

func newMetrics(m metric.Meter, t *Tracker) *metrics {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	out := &metrics{}
	out.moved, _ = m.Int64Counter("idemcoord.failover.shards_moved",
		metric.WithDescription("Shards the failover controller moved away from a failed region."))
	out.regions, _ = m.Int64Counter("idemcoord.failover.regions_failed",
		metric.WithDescription("Region failovers the controller carried out (passes that moved at least one shard)."))
	state, _ := m.Int64ObservableGauge("idemcoord.failover.region_state",
		metric.WithDescription("Region liveness state: 0 healthy, 1 suspect, 2 failed, 3 recovering."))
	leader, _ := m.Int64ObservableGauge("idemcoord.failover.leader",
		metric.WithDescription("1 while this instance leads the failover controller election."))
	m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range t.Statuses() {
			if s.State != "" {
				o.ObserveInt64(state, s.State.Value(), metric.WithAttributes(attribute.String("watched_region", s.Region)))
			}
		}
		o.ObserveInt64(leader, out.lead.Load())
		return nil
	}, state, leader)
	return out
}

func (m *metrics) failover(ctx context.Context, region string, shards int) {
	attrs := metric.WithAttributes(attribute.String("failed_region", region))
	m.moved.Add(ctx, int64(shards), attrs)
	m.regions.Add(ctx, 1, attrs)
}

func (m *metrics) leading(on bool) {
	if on {
		m.lead.Store(1)
	} else {
		m.lead.Store(0)
	}
}
