package daemon

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// liveness keeps this instance's liveness key in etcd under a session
// lease, and puts it back under a new lease whenever the old one is lost
// (a partition longer than the TTL, a revoke). Ownership keys are never
// attached to this lease.
type liveness struct {
	cli     *clientv3.Client
	key     string
	timeout time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	session *concurrency.Session // nil while the key is missing
	closing bool                 // close revoked the lease: its end is no loss

	ctx    context.Context // the keep-alive loop's lifetime
	cancel context.CancelFunc
	done   chan struct{}
}

// startLiveness registers the key (failing within timeout if etcd does not
// answer) and starts the loop that keeps it registered.
func startLiveness(ctx context.Context, cli *clientv3.Client, key string, timeout time.Duration, log *slog.Logger) (*liveness, error) {
	l := &liveness{cli: cli, key: key, timeout: timeout, log: log, done: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s, err := l.register()
	if err != nil {
		l.cancel()
		return nil, err
	}
	l.session = s
	go l.keep(s)
	return l, nil
}

// register grants a lease (bounded by timeout), starts its keep-alive for
// the loop's lifetime, and puts the key under it.
func (l *liveness) register() (*concurrency.Session, error) {
	gctx, cancel := context.WithTimeout(l.ctx, l.timeout)
	defer cancel()
	lease, err := l.cli.Grant(gctx, livenessTTL)
	if err != nil {
		return nil, err
	}
	s, err := concurrency.NewSession(l.cli, concurrency.WithLease(lease.ID), concurrency.WithContext(l.ctx))
	if err != nil {
		return nil, err
	}
	if _, err := l.cli.Put(gctx, l.key, time.Now().UTC().Format(time.RFC3339), clientv3.WithLease(lease.ID)); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// keep waits for the session to end and registers again, with capped
// backoff, until close.
func (l *liveness) keep(s *concurrency.Session) {
	defer close(l.done)
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-s.Done():
		}
		l.mu.Lock()
		closing := l.closing
		l.session = nil
		l.mu.Unlock()
		if closing {
			return // close revoked the lease on purpose
		}
		l.log.Warn("liveness lease lost; registering again", "key", l.key)
		for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
			var err error
			if s, err = l.register(); err == nil {
				break
			}
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		l.mu.Lock()
		l.session = s
		l.mu.Unlock()
		l.log.Info("liveness key registered again", "key", l.key)
	}
}

// ready reports an error while the key is missing, and checks that etcd
// answers.
func (l *liveness) ready(ctx context.Context) error {
	l.mu.Lock()
	ok := l.session != nil
	l.mu.Unlock()
	if !ok {
		return errors.New("daemon: liveness key not registered")
	}
	_, err := l.cli.Get(ctx, l.key)
	return err
}

// close revokes the lease (the key disappears at once) and stops the loop.
func (l *liveness) close() {
	l.mu.Lock()
	s := l.session
	l.session = nil
	l.closing = true
	l.mu.Unlock()
	if s != nil {
		s.Close() // revokes while the loop's context is still alive
	}
	l.cancel()
	<-l.done
}
