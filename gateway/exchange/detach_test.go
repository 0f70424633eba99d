package exchange

import (
	"context"
	"testing"
	"time"
)

// lookupCtx is a context of another package's kind: its Value calls the
// embedded context's method, as a retry share's and the tracer's do.
type lookupCtx struct{ context.Context }

func (c *lookupCtx) Value(key any) any { return c.Context.Value(key) }

type probeKey struct{}

// unsetKey is a key nobody sets: its lookup walks the whole chain.
var unsetKey any = struct{ x int }{1}

func TestADetachedContextKeepsValuesAndDropsCancellationAndDeadline(t *testing.T) {
	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), probeKey{}, "v"), time.Hour)
	ctx := Detach(parent)
	cancel()
	if ctx.Done() != nil || ctx.Err() != nil || context.Cause(ctx) != nil {
		t.Fatalf("detached context reports cancellation: done %v, err %v, cause %v", ctx.Done(), ctx.Err(), context.Cause(ctx))
	}
	if _, ok := ctx.Deadline(); ok {
		t.Fatal("detached context has a deadline")
	}
	if got := ctx.Value(probeKey{}); got != "v" {
		t.Fatalf("value = %v, want v", got)
	}
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	if child.Err() != nil {
		t.Fatalf("a child of the detached context starts cancelled: %v", child.Err())
	}
}

func TestALookupThroughADetachedContextAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under -race")
	}
	ctx := &lookupCtx{Detach(context.WithValue(context.Background(), probeKey{}, "v"))}
	allocs := testing.AllocsPerRun(100, func() {
		_ = ctx.Value(probeKey{})
		_ = ctx.Value(unsetKey)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per pair of lookups, want 0", allocs)
	}
}
