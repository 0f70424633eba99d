package ownership

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/idemcoord/idemcoord/internal/lifecycle"
)

// Liveness keeps one instance's liveness key in etcd under a
// concurrency.Session lease, and registers it again (a new key, so a new
// create revision) whenever the lease is lost. Ownership keys are never
// attached to this lease.
//
// Neither a Session that has not fired Done nor an Election.Campaign that
// returned nil proves the lease is valid: Done can fire late, and Campaign
// can return after the lease expired. Live computes validity itself, from
// the time each keepalive was sent by the injected clock: a keepalive sent
// at t that etcd answered proves the lease until t + TTL - PauseBudget -
// Drift, and nothing proves it after that until another is answered. That
// trades liveness (an instance may call itself not live while etcd still
// holds its lease) for safety (it never calls itself live after etcd may
// have dropped the lease).
type Liveness struct {
	cfg LivenessConfig
	key string

	mu         sync.Mutex
	session    *concurrency.Session // nil while unregistered
	createRev  int64
	validUntil time.Time
	changed    chan struct{}
	// unansweredFirst and unansweredLast are the send times of the first
	// and the last etcd request that went unanswered since the last one
	// answered (zero after an answer): CutOff's evidence.
	unansweredFirst, unansweredLast time.Time

	ctx context.Context // the lifetime, set by Start before the first registration
	// closing is set by Close before it revokes the lease, so the loop
	// does not take its own revoke for a loss (and warn about it).
	closing atomic.Bool
	run     lifecycle.Runner
}

var _ lifecycle.Component = (*Liveness)(nil)

// NewLiveness validates cfg and returns an instance's liveness key, not
// yet registered: Start registers it.
func NewLiveness(cfg LivenessConfig) (*Liveness, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Liveness{cfg: cfg, key: LivenessKey(cfg.Prefix, cfg.Region, cfg.Instance), changed: make(chan struct{})}, nil
}

// Start registers the instance's key (failing within RegisterTimeout, or
// when ctx ends, if etcd does not answer) and keeps it registered, again
// after every lost lease, until ctx ends or Close or Leave. When ctx ends
// the keepalives stop and the key expires with its lease, as after a
// crash; Close and Leave revoke it at once. It can be called once.
func (l *Liveness) Start(ctx context.Context) error {
	return l.run.Start(ctx, func(ctx context.Context) error {
		l.mu.Lock()
		l.ctx = ctx
		l.mu.Unlock()
		if err := l.register(ctx); err != nil {
			return fmt.Errorf("ownership: liveness %s: %w", l.key, err)
		}
		return nil
	}, l.loop)
}

// Key returns the liveness key.
func (l *Liveness) Key() string { return l.key }

// Live returns nil only while the instance is registered and its last
// answered keepalive still proves the lease valid; otherwise an error
// wrapping ErrNotLive (or ErrClosed).
func (l *Liveness) Live() error {
	l.mu.Lock()
	s, until := l.session, l.validUntil
	l.mu.Unlock()
	select {
	case <-l.run.Done():
		return ErrClosed
	default:
	}
	if s == nil {
		return fmt.Errorf("%w: %s not registered", ErrNotLive, l.key)
	}
	if now := l.cfg.Clock.Now(); !now.Before(until) {
		return fmt.Errorf("%w: %s: the last answered keepalive proves the lease until %s, it is %s",
			ErrNotLive, l.key, until.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}
	return nil
}

// ValidUntil returns when the lease stops being provably valid (zero while
// unregistered).
func (l *Liveness) ValidUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// CreateRevision returns the create revision of the current key, 0 while
// unregistered. Each registration has a new one: compare it, not the
// key's presence.
func (l *Liveness) CreateRevision() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.createRev
}

// Guard returns a comparison that holds only while the key is the one of
// the current registration. Put it in the transaction of every write that
// relies on this instance being live (see Guard for Move).
func (l *Liveness) Guard() clientv3.Cmp {
	rev := l.CreateRevision()
	if rev == 0 {
		rev = -1 // never holds
	}
	return clientv3.Compare(clientv3.CreateRevision(l.key), "=", rev)
}

// Session returns the current session (nil while unregistered), for an
// election among instances. Check Live before acting on it.
func (l *Liveness) Session() *concurrency.Session {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.session
}

// Changed returns a channel closed at the next change of registration or
// validity.
func (l *Liveness) Changed() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// Ready returns nil when the instance is live and etcd answers a read of
// its key: the /readyz check.
func (l *Liveness) Ready(ctx context.Context) error {
	if err := l.Live(); err != nil {
		return err
	}
	_, err := l.cfg.Client.Get(ctx, l.key)
	return err
}

// Done is closed when the liveness stops (Close, Leave, or the end of
// Start's context). A lost lease does not close it: the key is registered
// again.
func (l *Liveness) Done() <-chan struct{} { return l.run.Done() }

// Err returns nil while running and after Close or Leave; the cause of
// Start's context when that ended; the registration's error when Start
// failed.
func (l *Liveness) Err() error { return l.run.Err() }

// Close revokes the lease (the key disappears at once) and stops; it
// waits for the loop and is idempotent.
func (l *Liveness) Close() error { return l.stop(true) }

// stop ends the loop, revoking the lease first when revoke is set.
func (l *Liveness) stop(revoke bool) error {
	l.closing.Store(true)
	l.mu.Lock()
	s, lctx := l.session, l.ctx
	l.session, l.createRev = nil, 0
	l.mu.Unlock()
	if s != nil && !revoke {
		s.Orphan()
	}
	if s != nil && revoke {
		// Revoke bounded: an etcd that does not answer lets the lease
		// expire by itself instead. Not on the lifetime's context: the
		// loop returns as soon as the orphaned session is done, which
		// ends the lifetime under the revoke.
		s.Orphan()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(lctx), l.cfg.RegisterTimeout)
		l.cfg.Client.Revoke(ctx, s.Lease())
		cancel()
	}
	return l.run.Close()
}

// set records a registration state; s nil means unregistered.
func (l *Liveness) set(s *concurrency.Session, createRev int64, until time.Time) {
	l.mu.Lock()
	l.session, l.createRev, l.validUntil = s, createRev, until
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// extend moves validity forward after an answered keepalive sent at sent.
func (l *Liveness) extend(s *concurrency.Session, sent time.Time, ttl time.Duration) {
	until := sent.Add(ttl - l.cfg.PauseBudget - l.cfg.Drift)
	l.mu.Lock()
	if l.session == s && until.After(l.validUntil) {
		l.validUntil = until
		close(l.changed)
		l.changed = make(chan struct{})
	}
	l.mu.Unlock()
}

// errLeaseLost ends a keepalive round.
var errLeaseLost = errors.New("ownership: liveness lease lost")

// isLeaseGone reports a keepalive answer that says the lease is over.
func isLeaseGone(resp *clientv3.LeaseKeepAliveResponse, err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || (err == nil && resp.TTL <= 0)
}
