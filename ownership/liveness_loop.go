package ownership

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/retry"
)

// Re-registration backoff after a lost lease.
const (
	registerRetryMin = 100 * time.Millisecond
	registerRetryMax = 5 * time.Second
)

// register grants a lease, starts its session and puts a fresh key under
// it. The old key (a lease etcd may still hold) is deleted first, so the
// new key always has a new create revision.
func (l *Liveness) register(ctx context.Context) error {
	ctx, cancel := withClockTimeout(ctx, l.cfg.Clock, l.cfg.RegisterTimeout)
	defer cancel()
	cli := l.cfg.Client
	sent := l.cfg.Clock.Now()
	lease, err := cli.Grant(ctx, int64(l.cfg.TTL/time.Second))
	if err != nil {
		l.unanswered(sent)
		return err
	}
	l.answered(sent)
	s, err := concurrency.NewSession(cli, concurrency.WithLease(lease.ID), concurrency.WithContext(l.ctx))
	if err != nil {
		return err
	}
	if _, err := cli.Delete(ctx, l.key); err != nil {
		s.Close()
		return err
	}
	put, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", 0)).
		Then(clientv3.OpPut(l.key, sent.UTC().Format(time.RFC3339), clientv3.WithLease(lease.ID))).Commit()
	if err == nil && !put.Succeeded {
		err = errLeaseLost // another process registered the same instance name in between
	}
	if err != nil {
		s.Close()
		return err
	}
	l.set(s, put.Header.Revision, sent.Add(time.Duration(lease.TTL)*time.Second-l.cfg.PauseBudget-l.cfg.Drift))
	return nil
}

// loop keeps the lease alive and registers again after each loss, until
// the lifetime (ctx, which is l.ctx) ends.
func (l *Liveness) loop(ctx context.Context) error {
	for {
		s := l.Session()
		if s != nil {
			l.keepAlive(s)
		}
		if ctx.Err() != nil || l.closing.Load() {
			return nil
		}
		l.set(nil, 0, time.Time{})
		l.cfg.Logger.Warn("liveness lease lost; registering again", "key", l.key)
		if s != nil {
			// The session may have given up on a lease etcd still holds:
			// drop it, best effort, so its key cannot linger.
			ctx, cancel := withClockTimeout(l.ctx, l.cfg.Clock, l.cfg.RegisterTimeout)
			l.cfg.Client.Revoke(ctx, s.Lease())
			cancel()
		}
		backoff := retry.Backoff{Min: registerRetryMin, Max: registerRetryMax, Clock: l.cfg.Clock}
		for l.register(l.ctx) != nil {
			if backoff.Wait(ctx) != nil {
				return nil
			}
		}
		l.cfg.Logger.Info("liveness key registered again", "key", l.key, "create_revision", l.CreateRevision())
	}
}

// keepAlive sends a keepalive every KeepAliveInterval of the injected
// clock, noting when each was sent, and returns when the lease is lost or
// the loop ends. The session keeps its own keepalive stream too (every
// TTL/3); these one-shot keepalives exist because only they tell when the
// proving request left, and they come often enough that a stall of most
// of a TTL loses nothing.
func (l *Liveness) keepAlive(s *concurrency.Session) {
	every := l.cfg.KeepAliveInterval()
	tick := l.cfg.Clock.NewTicker(every)
	defer tick.Stop()
	var resumed time.Time // the last resumeSession that kept the lease
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-s.Done():
			// A session that ends again within a TTL of the last one
			// kept is not the client's deadline after a stall: give the
			// lease up, and register again as before.
			now := l.cfg.Clock.Now()
			if !resumed.IsZero() && now.Sub(resumed) < l.cfg.TTL {
				return
			}
			if s = l.resumeSession(s); s == nil {
				return
			}
			resumed = now
			continue
		case <-tick.C():
		}
		sent := l.cfg.Clock.Now()
		// A slow answer still proves the lease from when it was sent: wait
		// for it longer than the interval (a tick missed meanwhile fires
		// once it returns).
		ctx, cancel := withClockTimeout(l.ctx, l.cfg.Clock, l.cfg.TTL/3)
		resp, err := l.cfg.Client.KeepAliveOnce(ctx, s.Lease())
		cancel()
		if isLeaseGone(resp, err) {
			l.answered(sent)
			s.Orphan()
			return
		}
		if err != nil {
			l.unanswered(sent)
			continue
		}
		l.answered(sent)
		l.extend(s, sent, time.Duration(resp.TTL)*time.Second)
	}
}

// resumeSession is called when s's own keepalive stream ended. The
// stream keeps alive only every TTL/3, on the client's 500 ms tick, and
// ends once no answer came for a TTL by the client's clock: after a stall
// of about half the TTL (a GC pause, a SIGSTOP of a second) it ends
// although this loop's keepalives (every TTL/6) kept the lease alive in
// etcd. Taking that for a lost lease would revoke a live lease and
// register again: the region's last key gone for a moment, which every
// failover tracker sees as a suspect region. So one keepalive asks etcd:
// if the lease lives, a new session takes the same lease over, and the
// key and its create revision stay; if etcd says it is gone, or does not
// answer, the lease is lost (nil), as before.
func (l *Liveness) resumeSession(s *concurrency.Session) *concurrency.Session {
	s.Orphan()
	if l.ctx.Err() != nil || l.closing.Load() {
		return nil
	}
	sent := l.cfg.Clock.Now()
	ctx, cancel := withClockTimeout(l.ctx, l.cfg.Clock, l.cfg.TTL/3)
	resp, err := l.cfg.Client.KeepAliveOnce(ctx, s.Lease())
	cancel()
	switch {
	case isLeaseGone(resp, err):
		l.answered(sent)
		return nil
	case err != nil:
		l.unanswered(sent)
		return nil
	}
	l.answered(sent)
	ns, err := concurrency.NewSession(l.cfg.Client, concurrency.WithLease(s.Lease()), concurrency.WithContext(l.ctx))
	if err != nil {
		return nil
	}
	l.mu.Lock()
	if l.session != s { // closed or left meanwhile
		l.mu.Unlock()
		ns.Orphan()
		return nil
	}
	l.session = ns
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	l.extend(ns, sent, time.Duration(resp.TTL)*time.Second)
	l.cfg.Logger.Info("liveness session's keepalive stream ended while etcd still holds the lease: same lease, same key", "key", l.key)
	return ns
}

// withClockTimeout is context.WithTimeout on an injected clock.
func withClockTimeout(ctx context.Context, c clock.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	t := c.NewTimer(d)
	go func() {
		defer t.Stop()
		select {
		case <-t.C():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
