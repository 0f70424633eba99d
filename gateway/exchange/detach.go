package exchange

import "context"

// Detach returns ctx without its cancellation and deadline, with all its
// values: context.WithoutCancel's context, behind a context.WithValue.
//
// A bare WithoutCancel context is a struct held by value, and a lookup
// that reaches it through a context type of another package (a retry
// share's, the tracer's span lookup, which call its Value method) copies
// it to the heap: an allocation per lookup, and a request's store and
// upstream calls make several dozen. The context package's own types walk
// through it in place, so the value context on top, one allocation, makes
// every later lookup free.
func Detach(ctx context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), detachedKey{}, nil)
}

// detachedKey is the key of Detach's value context; nothing reads it.
type detachedKey struct{}
