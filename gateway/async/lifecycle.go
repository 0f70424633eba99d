package async

import "context"

// Start starts the recovery loop and the move sweep (each only when an
// endpoint needs it) and returns; they run until ctx ends or Close.
func (s *Stage) Start(ctx context.Context) error {
	runs := []func(context.Context) error{func(ctx context.Context) error { <-ctx.Done(); return nil }}
	if r := s.recoveryLoop(); r != nil {
		runs = append(runs, r)
	}
	if m := s.moveSweepLoop(); m != nil {
		runs = append(runs, m)
	}
	err := s.lc.Start(ctx, nil, runs...)
	if err != nil { // the runs never started: their tickers stop here
		s.stopTickers()
	}
	return err
}

// stopTickers stops the loops' tickers.
func (s *Stage) stopTickers() {
	for _, t := range s.tickers {
		t.Stop()
	}
}

// Close stops taking background work, stops the loops and waits for them
// and for the background runs (the async runs and the results recorded
// again).
func (s *Stage) Close() error {
	s.work.stop()
	err := s.lc.Close()
	s.work.close()
	return err
}

// Done is closed once the loops stopped (Close, or Start's ctx ended).
func (s *Stage) Done() <-chan struct{} { return s.lc.Done() }

// Err says why the loops stopped: nil while they run and after Close, the
// context's cause when the context given to Start ended.
func (s *Stage) Err() error { return s.lc.Err() }
