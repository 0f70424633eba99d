package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/retry"
)

type otherKey struct{}

// TestACallsContextCarriesItsShareAndFollowsItsParent: the context of a
// call carries the call's share (nested calls find it and add none), the
// parent's values, a deadline of the budget's time, and ends when its
// parent is cancelled.
func TestACallsContextCarriesItsShareAndFollowsItsParent(t *testing.T) {
	l := &retry.Loop{Budget: retry.Budget{Attempts: 3, Total: time.Hour}}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	ctx, done := l.Call(parent)
	defer done()
	share := retry.FromContext(ctx)
	if share == nil {
		t.Fatal("the call's context carries no share")
	}
	if v, _ := ctx.Value(otherKey{}).(string); v != "v" {
		t.Errorf("the parent's value is lost: %q", v)
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Hour {
		t.Errorf("deadline %v, %v: want one within the budget's hour", d, ok)
	}
	inner, innerDone := l.Call(ctx)
	defer innerDone()
	if retry.FromContext(inner) != share {
		t.Error("a nested call started a share of its own")
	}
	cancel()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the call's context did not end with its parent")
	}
}

// TestAStartedCallIsACallInOneAllocationLess: Loop.Start gives the
// context Loop.Call gives (the share, the deadline; nested calls add no
// share), End cancels it, and it costs
// one allocation fewer than Call with its done function.
func TestAStartedCallIsACallInOneAllocationLess(t *testing.T) {
	l := &retry.Loop{Budget: retry.Budget{Attempts: 3, Total: time.Hour}}
	ctx, end := l.Start(context.Background())
	share := retry.FromContext(ctx)
	if share == nil {
		t.Fatal("the started call's context carries no share")
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Hour {
		t.Errorf("deadline %v, %v: want one within the budget's hour", d, ok)
	}
	inner, innerEnd := l.Start(ctx)
	if retry.FromContext(inner) != share || inner != ctx {
		t.Error("a nested started call changed the context")
	}
	innerEnd.End()
	if ctx.Err() != nil {
		t.Error("ending a nested call ended its caller's")
	}
	end.End()
	if ctx.Err() == nil {
		t.Error("End did not cancel the call's context")
	}
	calls := testing.AllocsPerRun(100, func() {
		_, done := l.Call(context.Background())
		done()
	})
	starts := testing.AllocsPerRun(100, func() {
		_, end := l.Start(context.Background())
		end.End()
	})
	if starts != calls-1 {
		t.Errorf("Start and End allocate %.0f times, Call and done %.0f: want one fewer", starts, calls)
	}
}

// TestAShareStartedCallIsAShareCallInOneAllocationLess: Share.Start
// gives the context Share.Call gives (the share, a deadline within the
// limit), End cancels it, and it costs one
// allocation fewer than Call with its done function.
func TestAShareStartedCallIsAShareCallInOneAllocationLess(t *testing.T) {
	share := retry.NewShare(retry.Budget{Attempts: 3, Total: time.Hour})
	ctx, end := share.Start(context.Background(), time.Minute)
	if retry.FromContext(ctx) != share {
		t.Fatal("the started call's context does not carry its share")
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Minute {
		t.Errorf("deadline %v, %v: want one within the limit's minute", d, ok)
	}
	end.End()
	if ctx.Err() == nil {
		t.Error("End did not cancel the call's context")
	}
	calls := testing.AllocsPerRun(100, func() {
		_, done := share.Call(context.Background(), time.Minute)
		done()
	})
	starts := testing.AllocsPerRun(100, func() {
		_, end := share.Start(context.Background(), time.Minute)
		end.End()
	})
	if starts != calls-1 {
		t.Errorf("Start and End allocate %.0f times, Call and done %.0f: want one fewer", starts, calls)
	}
}
