package sqlstore

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/store"
)

// Event names: things that happen to a record after its claim, counted
// apart from claim decisions so that the decisions alone sum to the
// coordinated requests that reached the store.
const (
	eventUnknownRecorded  = "outcome_unknown_recorded"
	eventUnknownResolved  = "outcome_unknown_resolved"
	eventRecoveryTakeover = "recovery_takeover"
	// eventFencedTakeover counts takeovers of a live lease whose holder
	// was fenced out (ClaimRequest.TakeOverFenced).
	eventFencedTakeover = "fenced_takeover"
)

// metricOps are the op labels the fence, lost-ownership and retry counters
// are exported with at zero from the start, so a rate() over them exists
// before the first event.
var metricOps = []string{"cancel", "claim", "finish", "heartbeat", "stage", "takeover", "tx"}

// metrics are the store's OpenTelemetry instruments. Names follow the
// idemcoord_ prefix every component uses, so one Prometheus scrape shows the
// whole protocol.
type metrics struct {
	decisions metric.Int64Counter   // claim decisions, by endpoint and decision
	events    metric.Int64Counter   // result events, by endpoint and event
	fencedC   metric.Int64Counter   // writes refused by the fence, by op
	lost      metric.Int64Counter   // version-conditioned updates that matched nothing
	retries   metric.Int64Counter   // whole-transaction retries on 40001/40P01
	cleanedUp metric.Int64Counter   // records deleted by TTL cleanup
	compacted metric.Int64Counter   // records compacted to a dedup marker by cleanup
	batches   metric.Int64Histogram // requests per group-commit batch statement, by statement

	batchAttrs [2]metric.RecordOption // claim, finish

	// outcomeAttrs caches the attribute option of each (endpoint, name)
	// outcome counts: building an attribute set on every request cost
	// about 5 % of a first run's Go CPU. Its size is the counters' own
	// cardinality (endpoints x outcomes and events).
	outcomeAttrs sync.Map // outcomeKey -> []metric.AddOption (one option)
}

// outcomeKey names one series of the decision or event counter.
type outcomeKey struct{ endpoint, name string }

func newMetrics(m metric.Meter) (*metrics, error) {
	var mt metrics
	var err error
	if mt.decisions, err = m.Int64Counter("idemcoord.decisions",
		metric.WithDescription("Claim decisions, one per coordinated request that reached the store: first_run, replay, fingerprint_conflict, in_progress, takeover, outcome_unknown, downstream_window_passed.")); err != nil {
		return nil, err
	}
	if mt.events, err = m.Int64Counter("idemcoord.events",
		metric.WithDescription("Events after a claim: outcome_unknown_recorded, outcome_unknown_resolved, recovery_takeover (queued async work taken over by recovery).")); err != nil {
		return nil, err
	}
	if mt.fencedC, err = m.Int64Counter("idemcoord.fenced_writes_rejected",
		metric.WithDescription("Writes refused because the writer's epoch was not the shard's.")); err != nil {
		return nil, err
	}
	if mt.lost, err = m.Int64Counter("idemcoord.lost_ownership",
		metric.WithDescription("Version-conditioned updates that affected no row: the operation was taken over.")); err != nil {
		return nil, err
	}
	if mt.retries, err = m.Int64Counter("idemcoord.tx_retries",
		metric.WithDescription("Whole-transaction retries after serialization failures (40001) or deadlocks (40P01).")); err != nil {
		return nil, err
	}
	if mt.cleanedUp, err = m.Int64Counter("idemcoord.cleanup_deleted",
		metric.WithDescription("Expired resting records deleted by TTL cleanup.")); err != nil {
		return nil, err
	}
	if mt.compacted, err = m.Int64Counter("idemcoord.cleanup_compacted",
		metric.WithDescription("Records whose full answer cleanup dropped after their endpoint's replay_ttl, kept as dedup markers until ttl.")); err != nil {
		return nil, err
	}
	if mt.batches, err = m.Int64Histogram("idemcoord.store_batch_size",
		metric.WithDescription("Requests carried by each group-commit batch statement (two or more; a request that found a free slot ran its own statement and is not counted), by statement: claim, finish."),
		metric.WithExplicitBucketBoundaries(2, 3, 4, 6, 8, 12, 16, 24, 32, 64, 128)); err != nil {
		return nil, err
	}
	mt.batchAttrs = [2]metric.RecordOption{metric.WithAttributes(attribute.String("statement", "claim")),
		metric.WithAttributes(attribute.String("statement", "finish"))}
	ctx := context.Background()
	for _, op := range metricOps {
		attrs := metric.WithAttributes(attribute.String("op", op))
		mt.fencedC.Add(ctx, 0, attrs)
		mt.lost.Add(ctx, 0, attrs)
		mt.retries.Add(ctx, 0, attrs)
	}
	mt.cleanedUp.Add(ctx, 0)
	mt.compacted.Add(ctx, 0)
	return &mt, nil
}

// isEvent reports whether name is an event rather than a claim decision.
func isEvent(name string) bool {
	switch name {
	case eventUnknownRecorded, eventUnknownResolved, eventRecoveryTakeover, eventFencedTakeover:
		return true
	}
	return false
}

// outcome counts a claim decision, or an event (isEvent): the claim and
// update code report both through it.
func (m *metrics) outcome(ctx context.Context, endpoint, name string) {
	k := outcomeKey{endpoint, name}
	opt, ok := m.outcomeAttrs.Load(k)
	if !ok {
		label := "decision"
		if isEvent(name) {
			label = "event"
		}
		// The option is kept as the variadic slice Add takes: passing it
		// as one argument built that slice anew on every claim.
		opt, _ = m.outcomeAttrs.LoadOrStore(k, []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
			attribute.String("endpoint", endpoint), attribute.String(label, name)))})
	}
	if isEvent(name) {
		m.events.Add(ctx, 1, opt.([]metric.AddOption)...)
		return
	}
	m.decisions.Add(ctx, 1, opt.([]metric.AddOption)...)
}

// InitMetrics exports the decision and event counters of the given
// endpoints at zero, so that every series an alert uses exists before its
// first request.
func (s *Store) InitMetrics(ctx context.Context, endpoints []string) {
	for _, ep := range endpoints {
		for _, o := range store.Outcomes() {
			s.metrics.decisions.Add(ctx, 0, metric.WithAttributes(attribute.String("endpoint", ep), attribute.String("decision", o.String())))
		}
		for _, e := range []string{eventUnknownRecorded, eventUnknownResolved, eventRecoveryTakeover, eventFencedTakeover} {
			s.metrics.events.Add(ctx, 0, metric.WithAttributes(attribute.String("endpoint", ep), attribute.String("event", e)))
		}
		s.initWindowMetrics(ctx, ep) // window.go
	}
}

func (m *metrics) fenced(ctx context.Context, op string) {
	m.fencedC.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}

func (m *metrics) lostOwnership(ctx context.Context, op string) {
	m.lost.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}

func (m *metrics) txRetry(ctx context.Context, op string) {
	m.retries.Add(ctx, 1, metric.WithAttributes(attribute.String("op", op)))
}

// batch records one group-commit batch of n requests of statement (claim
// or finish).
func (m *metrics) batch(ctx context.Context, statement string, n int) {
	opt := m.batchAttrs[0]
	if statement == "finish" {
		opt = m.batchAttrs[1]
	}
	m.batches.Record(ctx, int64(n), opt)
}
