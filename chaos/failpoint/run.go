package failpoint

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/clock"
)

// Injector applies and heals faults; the drill's cluster implements it.
type Injector interface {
	// Inject applies f. It returns ErrUnsupported (wrapped) for a kind it
	// cannot apply.
	Inject(ctx context.Context, f Fault) error
	// Heal undoes f: restarts what was killed, resumes what was paused,
	// restores links and clocks.
	Heal(ctx context.Context, f Fault) error
}

// ErrUnsupported is returned (wrapped) by an Injector that cannot apply a
// fault kind; Run records it and goes on with the next fault.
var ErrUnsupported = errors.New("failpoint: fault not supported by this cluster")

// Observer hears about faults as they start and end (a progress line).
// Both calls may be nil.
type Observer struct {
	Started func(Fault)
	Healed  func(Fault)
}

// effectKey is the context key under which Run hands an injection its
// TookEffect mark.
type effectKey struct{}

// TookEffect tells Run, from inside Injector.Inject, that the fault took
// effect now: the history records this moment as the fault's Effective
// instead of Inject's return. An injection that goes on working after
// its fault took hold calls it (a region loss: its idemd is dead, its
// etcd and store members are still being stopped, seconds that the
// region's failover does not wait for). Only the first call counts;
// outside Run it does nothing.
func TookEffect(ctx context.Context) {
	if mark, ok := ctx.Value(effectKey{}).(func()); ok {
		mark()
	}
}

// Run executes sched against inj: each fault is injected at its offset from
// now and healed after its length, waiting on clk (clock.Real() in drills,
// a fake in tests). Each fault's window is recorded in rec as a
// history.KindFault operation, its Effective when Inject returned or
// when Inject called TookEffect. A fault that cannot be injected is recorded
// with its error in Detail and skipped. Run returns when every fault was
// healed or ctx ended; a ctx that ends mid-fault still heals it (with a
// fresh, bounded context), so the cluster is never left broken.
func Run(ctx context.Context, sched Schedule, inj Injector, rec *history.Recorder, clk clock.Clock, obs Observer) error {
	clk = clock.Or(clk)
	start := clk.Now()
	var errs []error
	for _, f := range sched.Faults {
		if err := clock.Sleep(ctx, clk, f.At-clk.Now().Sub(start)); err != nil {
			return errors.Join(append(errs, err)...)
		}
		call := rec.Now()
		var marked atomic.Int64
		ictx := context.WithValue(ctx, effectKey{}, func() { marked.CompareAndSwap(0, rec.Now()) })
		if err := inj.Inject(ictx, f); err != nil {
			rec.Add(history.Operation{Kind: history.KindFault, Call: call, Return: rec.Now(), Shard: -1,
				SentTo: f.Region, Fault: string(f.Kind), Link: string(f.Link), Skipped: true, Detail: f.String() + ": not injected: " + err.Error()})
			if !errors.Is(err, ErrUnsupported) {
				errs = append(errs, fmt.Errorf("inject %s: %w", f, err))
			}
			continue
		}
		effective := rec.Now()
		if m := marked.Load(); m != 0 {
			effective = m
		}
		if obs.Started != nil {
			obs.Started(f)
		}
		waitErr := clock.Sleep(ctx, clk, f.For)
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
		healErr := inj.Heal(hctx, f)
		cancel()
		rec.Add(history.Operation{Kind: history.KindFault, Call: call, Effective: effective, Return: rec.Now(), Shard: -1,
			SentTo: f.Region, Fault: string(f.Kind), Link: string(f.Link), Detail: f.String()})
		if obs.Healed != nil {
			obs.Healed(f)
		}
		if healErr != nil {
			errs = append(errs, fmt.Errorf("heal %s: %w", f, healErr))
		}
		if waitErr != nil {
			return errors.Join(append(errs, waitErr)...)
		}
	}
	return errors.Join(errs...)
}

// healTimeout bounds healing after the run's context ended: long enough to
// restart a region and move its shards back on a loaded 2-core machine
// (the in-process cluster's failback of ~340 shards ran past 30 s in two
// CI runs, leaving shards FENCING and failing I4 for the wrong reason),
// short enough not to hang a cancelled drill. The process cluster's own
// heals are bounded the same (chaos/cluster healTimeout).
const healTimeout = 2 * time.Minute
