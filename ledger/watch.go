package ledger

import (
	"context"
	"errors"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// Watch returns s as the gateway of region's instance worker should use
// it: every call is s's, and its outcome tells n whether the store is
// down (store.ErrUnavailable) or answers, which opens and closes the
// store outage windows n audits (outage.go). c is the clock the windows
// and the events are timed by (nil: the system's). Call it before the
// gateway serves, once.
func (n *Notes) Watch(s store.Store, region, worker string, c clock.Clock) store.Store {
	n.out.region, n.out.worker, n.out.clock = region, worker, clock.Or(c)
	return &watched{Store: s, n: n}
}

// watched is a store.Store whose calls' outcomes a Notes watches. The
// steady state costs an atomic load before and after each call, and
// nothing is allocated.
type watched struct {
	store.Store
	n *Notes
}

var _ store.Store = (*watched)(nil)

// observe tells n what a call that started in generation gen ended with:
// unavailable opens a window, and only a definite answer of the store
// closes it (success, or one of its own refusals: not found, a conflict,
// a stale epoch, ...). Any other error (a connection error a backend did
// not classify, the caller giving up) says neither.
func (w *watched) observe(gen uint64, err error) {
	switch {
	case err == nil:
		w.n.storeAnswered(gen)
	case errors.Is(err, store.ErrUnavailable):
		w.n.storeFailed()
	case storeAnswer(err):
		w.n.storeAnswered(gen)
	}
}

// storeAnswer reports whether err is the store's own answer, which it
// gives only when it is reachable.
func storeAnswer(err error) bool {
	for _, target := range []error{store.ErrNotFound, store.ErrLostOwnership, store.ErrContention,
		store.ErrFingerprintVersion, store.ErrNotUnknown, store.ErrNotCancellable, store.ErrDownstreamWindowPassed,
		fencing.ErrStaleEpoch} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// DBSystem is the watched store's (storeotel.Describer), "" if it has none.
func (w *watched) DBSystem() string {
	if d, ok := w.Store.(interface{ DBSystem() string }); ok {
		return d.DBSystem()
	}
	return ""
}

// DBNamespace is the watched store's (storeotel.Describer), "" if it has none.
func (w *watched) DBNamespace() string {
	if d, ok := w.Store.(interface{ DBNamespace() string }); ok {
		return d.DBNamespace()
	}
	return ""
}

func (w *watched) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	g := w.n.outageGen()
	c, err := w.Store.Begin(ctx, req)
	w.observe(g, err)
	return c, err
}

func (w *watched) Heartbeat(ctx context.Context, l *store.Lease) error {
	g := w.n.outageGen()
	err := w.Store.Heartbeat(ctx, l)
	w.observe(g, err)
	return err
}

func (w *watched) RecordStage(ctx context.Context, l *store.Lease, stage string) error {
	g := w.n.outageGen()
	err := w.Store.RecordStage(ctx, l, stage)
	w.observe(g, err)
	return err
}

func (w *watched) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	g := w.n.outageGen()
	err := w.Store.Finish(ctx, l, res)
	w.observe(g, err)
	return err
}

func (w *watched) Release(ctx context.Context, l *store.Lease, summary string) error {
	g := w.n.outageGen()
	err := w.Store.Release(ctx, l, summary)
	w.observe(g, err)
	return err
}

func (w *watched) Resolve(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	g := w.n.outageGen()
	err := w.Store.Resolve(ctx, rec, tok, res)
	w.observe(g, err)
	return err
}

func (w *watched) Lookup(ctx context.Context, actor string, opID uuid.UUID) (store.Record, error) {
	g := w.n.outageGen()
	r, err := w.Store.Lookup(ctx, actor, opID)
	w.observe(g, err)
	return r, err
}

func (w *watched) Read(ctx context.Context, sc store.Scope) (store.Record, error) {
	g := w.n.outageGen()
	r, err := w.Store.Read(ctx, sc)
	w.observe(g, err)
	return r, err
}

func (w *watched) SaveRequest(ctx context.Context, l *store.Lease, request []byte) error {
	g := w.n.outageGen()
	err := w.Store.SaveRequest(ctx, l, request)
	w.observe(g, err)
	return err
}

func (w *watched) DropRequest(ctx context.Context, opID uuid.UUID) error {
	g := w.n.outageGen()
	err := w.Store.DropRequest(ctx, opID)
	w.observe(g, err)
	return err
}

func (w *watched) Stranded(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	g := w.n.outageGen()
	q, err := w.Store.Stranded(ctx, scan)
	w.observe(g, err)
	return q, err
}

func (w *watched) Fenced(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	g := w.n.outageGen()
	q, err := w.Store.Fenced(ctx, scan)
	w.observe(g, err)
	return q, err
}

func (w *watched) TakeOver(ctx context.Context, rec store.Record, req store.ClaimRequest) (store.Claim, error) {
	g := w.n.outageGen()
	c, err := w.Store.TakeOver(ctx, rec, req)
	w.observe(g, err)
	return c, err
}

func (w *watched) Cancel(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	g := w.n.outageGen()
	err := w.Store.Cancel(ctx, rec, tok, res)
	w.observe(g, err)
	return err
}

func (w *watched) Fence(ctx context.Context, shard int) (int64, string, error) {
	g := w.n.outageGen()
	e, o, err := w.Store.Fence(ctx, shard)
	w.observe(g, err)
	return e, o, err
}

func (w *watched) Ping(ctx context.Context) error {
	g := w.n.outageGen()
	err := w.Store.Ping(ctx)
	w.observe(g, err)
	return err
}
