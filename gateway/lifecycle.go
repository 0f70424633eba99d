package gateway

import "context"

// Start starts the gateway's background loops, the async recovery loop
// and the move sweep (each only when an endpoint needs it), and returns;
// they run until ctx ends or Close. The gateway serves requests without
// them (before Start, or after ctx ended), but nothing then takes over
// queued or fenced operations. Start is lifecycle.Component's, as Close,
// Done and Err are.
//
// A single-region gateway (no Owners) refuses to start on a store whose
// shard fences give its region nothing to serve, with an error naming
// the missing step (the store's BootstrapFences, wrapping
// store.ErrNotBootstrapped) instead of answering every request 503.
func (g *Gateway) Start(ctx context.Context) error {
	if err := g.checkFences(ctx); err != nil {
		return err
	}
	return g.async.Start(ctx)
}

// Done is closed once the gateway's loops stopped (Close, or the context
// given to Start ended).
func (g *Gateway) Done() <-chan struct{} { return g.async.Done() }

// Err says why the loops stopped: nil while they run and after Close, the
// context's cause when the context given to Start ended.
func (g *Gateway) Err() error { return g.async.Err() }

// Close stops accepting async work, stops the async recovery loop and the
// move sweep, and waits for background executions to finish and record
// their results (each is bounded by its endpoint's upstream timeout), for results
// whose recording is being retried after a store error (bounded by
// recordBudget), and for the reads of runs that retries wait on (they
// end with their last waiter). Call it after the HTTP server has shut
// down.
func (g *Gateway) Close() error {
	err := g.async.Close()
	g.waits.close()
	return err
}
