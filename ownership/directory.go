package ownership

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
)

// DefaultPrefix is the etcd prefix of the directory. One deployment per
// etcd cluster uses it; tests and side-by-side deployments pick their own.
const DefaultPrefix = "/idemcoord/"

// FenceStore is the SQL side of a transfer: the authoritative fence rows.
// sqlstore.Store implements it.
type FenceStore interface {
	// MoveFence applies m as a compare-and-swap on m.From, audited; it is
	// a no-op when m was already applied and returns
	// *fencing.MoveConflictError when the fence holds anything else.
	MoveFence(ctx context.Context, m fencing.Move) error
	// Fence returns a shard's epoch and owner region.
	Fence(ctx context.Context, shard int) (epoch int64, owner string, err error)
	// BootstrapFences creates every missing fence row of shards shards,
	// owned by home(shard) at epoch 1, never overwriting one.
	BootstrapFences(ctx context.Context, shards int, home func(int) string) error
}

// Directory reads and changes the shard map in etcd. Its methods are safe
// for concurrent use; all reads are linearizable.
type Directory struct {
	cli    *clientv3.Client
	fences FenceStore
	prefix string
	log    *slog.Logger
	clock  clock.Clock
	// retries counts the etcd steps run again (etcdretry.go).
	retries metric.Int64Counter

	// afterStep, set only by tests, runs after each step of a transfer
	// ("fencing", "fenced"); an error stops the mover there, as if it died.
	afterStep func(step string) error
}

// Option configures a Directory or a Cache.
type Option func(*options)

type options struct {
	prefix string
	log    *slog.Logger
	clock  clock.Clock
	meter  metric.Meter
}

// WithPrefix sets the etcd prefix. Default DefaultPrefix. It must end in
// "/".
func WithPrefix(p string) Option { return func(o *options) { o.prefix = p } }

// WithLogger sets the logger. Default slog.Default().
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// WithClock sets the clock that times retries. Default the system clock.
func WithClock(c clock.Clock) Option { return func(o *options) { o.clock = c } }

// WithMeter sets the meter of a Directory's metric
// idemcoord.ownership.etcd_retries (etcd steps of its bootstrap and of
// shard moves run again after a transient etcd failure, by step). Default
// none: not measured. A Cache ignores it.
func WithMeter(m metric.Meter) Option { return func(o *options) { o.meter = m } }

func applyOptions(opts []Option) options {
	o := options{prefix: DefaultPrefix, log: slog.Default()}
	for _, f := range opts {
		f(&o)
	}
	if !strings.HasSuffix(o.prefix, "/") {
		o.prefix += "/"
	}
	return o
}

// NewDirectory returns a directory on cli whose transfers bump fences.
func NewDirectory(cli *clientv3.Client, fences FenceStore, opts ...Option) *Directory {
	o := applyOptions(opts)
	return &Directory{cli: cli, fences: fences, prefix: o.prefix, log: o.log, clock: clock.Or(o.clock),
		retries: newRetryCounter(o.meter)}
}

// Prefix returns the directory's etcd prefix.
func (d *Directory) Prefix() string { return d.prefix }

// shardKey is the key of a shard: five digits, so keys sort by shard up to
// config.MaxShards.
func shardKey(prefix string, shard int) string { return fmt.Sprintf("%sshards/%05d", prefix, shard) }

func shardsPrefix(prefix string) string { return prefix + "shards/" }

func countKey(prefix string) string { return prefix + "shard-count" }

// shardOfKey parses a shard key under prefix.
func shardOfKey(prefix string, key []byte) (int, bool) {
	s, ok := strings.CutPrefix(string(key), shardsPrefix(prefix))
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// step runs the test hook after a transfer step.
func (d *Directory) step(name string) error {
	if d.afterStep == nil {
		return nil
	}
	return d.afterStep(name)
}
