package failover

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/ownership"
)

// Controller and tracker defaults. The goal they serve: a killed region's
// shards are served by their failover region within 5 s at p99, from the
// kill to a client's first success there, with no failover of a region
// that is only slow or briefly stalled (docs/failover.md, "Timings"). A
// killed instance's key lives 1.7-2.5 s past its death (liveness TTL
// ownership.DefaultLivenessTTL, 2 s, past the last of its keepalives, sent
// six times per TTL, plus etcd's 500 ms expiry check); the watch sees the
// delete at once (a poll within DefaultPollInterval when the watch is
// broken); the leader re-reads exactly DefaultConfirmDelay later and
// confirms the failure, or at once when the Prober finds nothing serving
// at the region's address (a killed process); the moves then take
// 0.15-0.5 s for a third of 1024 shards (batches of 100 side by side,
// each batch's SQL fences one transaction), and the gateways' watch-fed
// caches follow within milliseconds: 2.1-2.8 s in all for a killed
// region, about 0.5 s more for a paused or cut-off one (docs/failover.md,
// "The down probe and the held forward"). A region whose last instance
// shuts down cleanly marks its key as left before revoking it, and is
// failed at once.
const (
	// DefaultConfirmDelay is how long a region must have no liveness key
	// before it is failed. The lease TTL already is the main detector
	// (an instance that stalls for less than most of a TTL keeps its
	// key), so this only absorbs an instance that lost its key and
	// registers again at once (a stall just past the lease, an etcd
	// hiccup); longer adds directly to every failover. Clean shutdowns
	// skip it.
	DefaultConfirmDelay = 500 * time.Millisecond
	// DefaultHoldTime is how long a returning region's instances must stay
	// registered (the same create revision) before it is healthy again: a
	// crash-looping region must not look healthy to an operator about to
	// fail back. Nothing automatic depends on it, so it can be generous.
	DefaultHoldTime = 30 * time.Second
	// DefaultStartupGrace is how long a freshly started tracker waits
	// before failing a region it has never seen alive: on a cold start
	// the other regions may simply not have registered yet. Generous:
	// it only delays failing a region that never came up.
	DefaultStartupGrace = 15 * time.Second
	// DefaultPollInterval is how often the state is re-read even without
	// a watch event: it drives the timed transitions and bounds the delay
	// when a watch is broken.
	DefaultPollInterval = time.Second
	// DefaultElectionTTL is the controller's election lease TTL: a dead
	// leader is replaced within it. Like the liveness TTL, since the
	// leader usually dies with its region's instances: a longer one would
	// delay the failover of the leader's own region by the difference.
	DefaultElectionTTL = 2 * time.Second
	// DefaultMoveConcurrency is how many shards the controller moves at
	// once where they go one by one: a batch that fell back to Move, and
	// the SQL fences on a store that cannot move a batch's fences in one
	// transaction (ownership.FenceBatcher; sqlstore and patronistore can).
	// Each such move holds one store connection, so this also caps the
	// SQL connections a failover takes from the pool. A batched failover
	// of 1024 shards over three regions (~342 moves, four batches side by
	// side) holds four.
	DefaultMoveConcurrency = 64
	// DefaultStuckAfter is how long a transfer may sit in FENCING,
	// unchanged, before the leading controller finishes it: longer than
	// any planned move's drain (idemctl move drains 10 s by default, and
	// CheckDrain refuses a drain this long), so it only finishes a
	// transfer whose mover died or gave up.
	DefaultStuckAfter = time.Minute
	// DefaultRetryBackoff is the wait after a failed campaign or pass.
	DefaultRetryBackoff = 500 * time.Millisecond
	// ControllerOperator is the operator name of the controller's moves in
	// the audit table.
	ControllerOperator = "controller"
)

// Topology is what the failover package needs of the region topology
// (*region.Topology implements it).
type Topology interface {
	// Names returns the region names.
	Names() []string
	// Home returns a shard's home region.
	Home(shard int) string
	// Successors returns a region's failover order.
	Successors(name string) ([]string, error)
}

// Auditor writes a repair audit row (sqlstore.Store implements it).
type Auditor interface {
	// Audit records that operator did action for reason; detail says on
	// what.
	Audit(ctx context.Context, operator, action, reason, detail string) error
}

// Config configures a Controller.
type Config struct {
	// Client is the etcd client. Required.
	Client *clientv3.Client
	// Directory is the ownership directory whose shards the controller
	// moves. Required.
	Directory *ownership.Directory
	// Topology is the region topology. Required.
	Topology Topology
	// Prefix is the directory prefix under which instances keep their
	// liveness keys and the election lives. Default Directory.Prefix(),
	// else ownership.DefaultPrefix.
	Prefix string
	// Audit records each region failover (each shard's move is audited by
	// the directory's fence store). Required.
	Audit Auditor
	// Name identifies this candidate in the election (the instance name).
	// Required.
	Name string
	// ConfirmDelay, HoldTime, StartupGrace and PollInterval time the
	// region states (see the Default constants). Zero means the default.
	ConfirmDelay, HoldTime, StartupGrace, PollInterval time.Duration
	// ElectionTTL is the election lease TTL, whole seconds (rounded up).
	// Default DefaultElectionTTL.
	ElectionTTL time.Duration
	// StuckAfter is how long the leading controller lets a shard stay in
	// FENCING with the same etcd revision before it finishes the
	// transfer itself (a mover that died or gave up between the steps
	// leaves the shard refusing every write until someone does). Default
	// DefaultStuckAfter.
	StuckAfter time.Duration
	// MoveConcurrency bounds concurrent shard moves. Default
	// DefaultMoveConcurrency.
	MoveConcurrency int
	// Probe, when set, is asked whether a region that just turned suspect
	// is down (nothing serves at its address); one that is is failed at
	// once instead of after ConfirmDelay. Default nil: every suspect
	// region waits ConfirmDelay. The daemon sets a PeerProbe unless
	// etcd.down_probe is off.
	Probe Prober
	// Clock times states, polls and backoff. Default the system clock.
	Clock clock.Clock
	// Meter records failovers and region states. Default no metrics.
	Meter metric.Meter
	// Logger is the logger. Default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns a Config with every default set (the Default
// constants, the system clock, slog.Default()); Client, Directory,
// Topology, Audit and Name are left to set, and Prefix empty (it follows
// Directory).
func DefaultConfig() Config {
	c := Config{}.withDefaults()
	c.Prefix = "" // Directory.Prefix() once Directory is set
	return c
}

// withDefaults returns c with every zero field defaulted.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.ConfirmDelay, DefaultConfirmDelay)
	def(&c.HoldTime, DefaultHoldTime)
	def(&c.StartupGrace, DefaultStartupGrace)
	def(&c.PollInterval, DefaultPollInterval)
	def(&c.ElectionTTL, DefaultElectionTTL)
	def(&c.StuckAfter, DefaultStuckAfter)
	c.ElectionTTL = (c.ElectionTTL + time.Second - 1).Truncate(time.Second)
	if c.MoveConcurrency == 0 {
		c.MoveConcurrency = DefaultMoveConcurrency
	}
	if c.Prefix == "" {
		c.Prefix = ownership.DefaultPrefix
		if c.Directory != nil {
			c.Prefix = c.Directory.Prefix()
		}
	}
	c.Clock = clock.Or(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate returns an error naming every field that cannot work and why
// (wrapping ErrBadConfig).
func (c Config) Validate() error {
	var bad []string
	add := func(f string, a ...any) { bad = append(bad, fmt.Sprintf(f, a...)) }
	if c.Client == nil {
		add("Client is required")
	}
	if c.Directory == nil {
		add("Directory is required")
	}
	if c.Topology == nil {
		add("Topology is required")
	}
	if c.Audit == nil {
		add("Audit is required")
	}
	if c.Name == "" {
		add("Name is required")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"ConfirmDelay", c.ConfirmDelay}, {"HoldTime", c.HoldTime}, {"StartupGrace", c.StartupGrace},
		{"PollInterval", c.PollInterval}, {"ElectionTTL", c.ElectionTTL}, {"StuckAfter", c.StuckAfter}} {
		if d.v < 0 {
			add("%s must not be negative, got %s", d.name, d.v)
		}
	}
	if c.MoveConcurrency < 0 {
		add("MoveConcurrency must not be negative, got %d", c.MoveConcurrency)
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrBadConfig, strings.Join(bad, "; "))
}

// CheckDrain returns an error naming field unless drain, how long a
// planned move (idemctl move, drain, failback) lets the old owner finish
// what it started, ends before the leading controller's repair of stuck
// transfers could finish that move under it: stuckAfter, the controllers'
// Config.StuckAfter (0: DefaultStuckAfter). A longer drain would be cut
// at stuckAfter, bumping the fence under the very operations it waits
// for, whose results are then refused after their clients had them.
func CheckDrain(field string, drain, stuckAfter time.Duration) error {
	if stuckAfter == 0 {
		stuckAfter = DefaultStuckAfter
	}
	switch {
	case drain < 0:
		return fmt.Errorf("%s must not be negative, got %s", field, drain)
	case drain >= stuckAfter:
		return fmt.Errorf("%s (%s) must be shorter than the failover controller's StuckAfter (%s): the controller "+
			"finishes a transfer left FENCING that long and would cut the drain", field, drain, stuckAfter)
	}
	return nil
}
