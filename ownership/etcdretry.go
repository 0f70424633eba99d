package ownership

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemcoord/idemcoord/internal/retry"
)

// The etcd steps the directory runs again after a transient failure, as
// named in the retry warning and in the step attribute of
// idemcoord.ownership.etcd_retries.
const (
	stepBootstrap   = "bootstrap"         // the shard count and the missing entries
	stepRead        = "read"              // a move's linearizable read of the shard
	stepStart       = "move_start"        // the write that puts a shard in FENCING
	stepFinish      = "move_finish"       // the write that makes a FENCING shard final
	stepStartBatch  = "move_start_batch"  // MoveBatch's FENCING write of up to maxBatch shards
	stepFinishBatch = "move_finish_batch" // MoveBatch's final write of up to maxBatch shards
)

// retryMetricName is the counter of etcd steps run again.
const retryMetricName = "idemcoord.ownership.etcd_retries"

// newRetryCounter returns the counter of etcd steps run again on m (a
// no-op one when m is nil).
func newRetryCounter(m metric.Meter) metric.Int64Counter {
	if m == nil {
		m = noop.NewMeterProvider().Meter("")
	}
	c, err := m.Int64Counter(retryMetricName, metric.WithDescription(
		"Etcd steps of the ownership directory (its bootstrap, the writes of shard moves) run again after a transient etcd failure, by step."))
	if err != nil {
		c, _ = noop.NewMeterProvider().Meter("").Int64Counter(retryMetricName)
	}
	return c
}

// transientEtcd reports whether err is an etcd failure that passes: the
// server timed a proposal out or lost its leader, or the member is
// unavailable. Such a request may have been applied; only a guarded,
// idempotent step may be run again after it, and a step that writes must
// recognise its own write when it finds it applied.
func transientEtcd(err error) bool {
	if err == nil {
		return false
	}
	for _, e := range []error{rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail,
		rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrLeaderChanged, rpctypes.ErrNoLeader,
		rpctypes.ErrTimeoutWaitAppliedIndex} {
		if errors.Is(err, e) {
			return true
		}
	}
	return status.Code(err) == codes.Unavailable // status.Code unwraps
}

// etcdLoop is the loop that runs an etcd step of shard (-1: of no one
// shard) again after a transient failure, within retry.Default.Etcd,
// logging a warning and counting each retry.
func (d *Directory) etcdLoop(step string, shard int) *retry.Loop {
	return &retry.Loop{Budget: retry.Default.Etcd, Clock: d.clock, OnRetry: func(ctx context.Context, _ string) {
		d.retries.Add(ctx, 1, metric.WithAttributes(attribute.String("step", step)))
		if shard < 0 {
			d.log.WarnContext(ctx, "etcd busy, running the step again", "step", step)
			return
		}
		d.log.WarnContext(ctx, "etcd busy, running the step again", "step", step, "shard", shard)
	}}
}

// read is Get for a move: a linearizable read of the shard, read again
// after a transient etcd failure.
func (d *Directory) read(ctx context.Context, shard int) (Entry, error) {
	var e Entry
	err := d.etcdLoop(stepRead, shard).Do(ctx, stepRead, transientEtcd, func(ctx context.Context) error {
		var err error
		e, err = d.Get(ctx, shard)
		return err
	})
	return e, err
}

// same reports whether e and o hold the same value: owner, epoch, state
// and transfer (with its operator and reason), whatever their revisions.
func (e Entry) same(o Entry) bool {
	if e.Shard != o.Shard || e.Owner != o.Owner || e.Epoch != o.Epoch || e.State != o.State {
		return false
	}
	if e.Transfer == nil || o.Transfer == nil {
		return e.Transfer == nil && o.Transfer == nil
	}
	return *e.Transfer == *o.Transfer
}
