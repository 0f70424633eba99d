package ownership

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/lifecycle"
	"github.com/idemcoord/idemcoord/internal/retry"
)

// Cache backoff between failed full re-reads: short enough that a member
// failover (~1 s) costs little staleness, capped so an etcd outage is not
// hammered.
const (
	cacheRetryMin = 50 * time.Millisecond
	cacheRetryMax = 2 * time.Second
)

var errWatchClosed = errors.New("ownership: watch channel closed")

// Cache is a local copy of the shard map, fed by an etcd watch. It is only
// a hint: it may lag etcd, and the SQL fence re-checks every write. Lookup
// and Owner never call etcd. A watch failure (compaction, a lost member, a
// lost leader) makes it re-read the whole map and watch again from the
// revision it read at, plus one; meanwhile it keeps answering from what it
// has.
type Cache struct {
	cli    *clientv3.Client
	prefix string
	log    *slog.Logger
	clock  clock.Clock

	mu       sync.RWMutex
	entries  map[int]Entry
	rev      int64
	watching bool
	lastErr  error
	changed  chan struct{} // closed and replaced whenever rev or watching changes

	reloads atomic.Int64
	run     lifecycle.Runner
}

var _ lifecycle.Component = (*Cache)(nil)

// NewCache validates cfg and returns an empty cache; Start fills it.
func NewCache(cfg CacheConfig) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Cache{cli: cfg.Client, prefix: cfg.Prefix, log: cfg.Logger, clock: cfg.Clock, changed: make(chan struct{})}, nil
}

// Start reads the whole shard map (failing if etcd does not answer before
// ctx ends) and then watches it until ctx ends or Close. It can be called
// once.
func (c *Cache) Start(ctx context.Context) error {
	return c.run.Start(ctx, func(ctx context.Context) error {
		if err := c.load(ctx); err != nil {
			return err
		}
		c.reloads.Store(0)
		return nil
	}, c.follow)
}

// Lookup returns the cached entry of a shard. It does no I/O.
func (c *Cache) Lookup(shard int) (Entry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[shard]
	return e, ok
}

// Owner returns the cached owner region, epoch and state of a shard, for
// routing. It does no I/O; ok is false when the shard is unknown.
func (c *Cache) Owner(shard int) (region string, epoch int64, state string, ok bool) {
	e, ok := c.Lookup(shard)
	return e.Owner, e.Epoch, string(e.State), ok
}

// Revision returns the etcd revision the cache reflects.
func (c *Cache) Revision() int64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.rev
}

// Reloads returns how many full re-reads followed a watch failure.
func (c *Cache) Reloads() int64 { return c.reloads.Load() }

// Ready returns nil while the watch is established, else why not. Lookups
// keep answering either way; a readiness probe uses Ready to take an
// instance whose view may be going stale out of rotation.
func (c *Cache) Ready() error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.watching {
		return nil
	}
	if c.lastErr != nil {
		return fmt.Errorf("ownership: cache watch down: %w", c.lastErr)
	}
	return errors.New("ownership: cache watch not established yet")
}

// WaitRevision blocks until the cache reflects etcd revision rev (or a
// later one), or ctx ends.
func (c *Cache) WaitRevision(ctx context.Context, rev int64) error {
	for {
		c.mu.RLock()
		have, ch := c.rev, c.changed
		c.mu.RUnlock()
		if have >= rev {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("ownership: cache at revision %d, waiting for %d: %w", have, rev, ctx.Err())
		}
	}
}

// Changed returns a channel closed at the next change of the cache: a
// revision applied or the watch established. A caller waiting for an
// entry to change takes the channel, reads the entry, and waits on the
// channel if the entry is not what it waits for.
func (c *Cache) Changed() <-chan struct{} {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.changed
}

// WaitReady blocks until the watch is established (Ready returns nil), or
// ctx ends.
func (c *Cache) WaitReady(ctx context.Context) error {
	for {
		c.mu.RLock()
		ok, ch := c.watching, c.changed
		c.mu.RUnlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("ownership: cache watch not established: %w", ctx.Err())
		}
	}
}

// Close stops the watch and waits for it; idempotent. Lookups keep
// answering from what the cache last had.
func (c *Cache) Close() error { return c.run.Close() }

// Done is closed once the watch has stopped.
func (c *Cache) Done() <-chan struct{} { return c.run.Done() }

// Err returns nil while the cache watches and after Close, then why it
// stopped (the cause of Start's context when that ended, or the first
// read's error when Start failed).
func (c *Cache) Err() error { return c.run.Err() }

// notify wakes WaitRevision callers; c.mu is held.
func (c *Cache) notify() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// load replaces the cache with a full linearizable read.
func (c *Cache) load(ctx context.Context) error {
	entries, rev, err := list(ctx, c.cli, c.prefix)
	if err != nil {
		return err
	}
	m := make(map[int]Entry, len(entries))
	for _, e := range entries {
		m[e.Shard] = e
	}
	c.mu.Lock()
	c.entries, c.rev = m, rev
	c.notify()
	c.mu.Unlock()
	c.reloads.Add(1)
	return nil
}

// follow watches until ctx ends, re-reading everything after each
// failure.
func (c *Cache) follow(ctx context.Context) error {
	for {
		err := c.watch(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.setWatching(false, err)
		c.log.WarnContext(ctx, "ownership cache watch failed; re-reading the shard map", "err", err)
		backoff := retry.Backoff{Min: cacheRetryMin, Max: cacheRetryMax, Clock: c.clock}
		for {
			err := c.load(ctx)
			if err == nil {
				break
			}
			c.setWatching(false, err)
			if backoff.Wait(ctx) != nil {
				return nil
			}
		}
	}
}

func (c *Cache) setWatching(ok bool, err error) {
	c.mu.Lock()
	c.watching, c.lastErr = ok, err
	c.notify()
	c.mu.Unlock()
}

// watch follows the shard keys from the cache's revision + 1 and returns
// why it stopped. WithRequireLeader ends the watch when its member loses
// the quorum, instead of leaving it silent.
func (c *Cache) watch(ctx context.Context) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	from := c.Revision() + 1
	wch := c.cli.Watch(wctx, shardsPrefix(c.prefix), clientv3.WithPrefix(), clientv3.WithRev(from),
		clientv3.WithCreatedNotify())
	for resp := range wch {
		if err := resp.Err(); err != nil {
			return err // ErrCompacted among others: the caller re-reads
		}
		if resp.Created {
			c.setWatching(true, nil)
			continue
		}
		if err := c.apply(resp); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return errWatchClosed
}

// apply folds one watch response into the cache.
func (c *Cache) apply(resp clientv3.WatchResponse) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range resp.Events {
		shard, ok := shardOfKey(c.prefix, ev.Kv.Key)
		if !ok {
			continue
		}
		if ev.Type == clientv3.EventTypeDelete {
			delete(c.entries, shard)
			continue
		}
		e, err := decodeEntry(shard, ev.Kv.Value, ev.Kv.ModRevision)
		if err != nil {
			return err
		}
		c.entries[shard] = e
	}
	if resp.Header.Revision > c.rev {
		c.rev = resp.Header.Revision
	}
	c.notify()
	return nil
}
