package lifecycle_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idemcoord/idemcoord/internal/lifecycle"
)

// waitRun is a run that returns once its lifetime ends.
func waitRun(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestRunnerCloseIsCleanAndIdempotent(t *testing.T) {
	var r lifecycle.Runner
	if err := r.Start(t.Context(), nil, waitRun, waitRun); err != nil {
		t.Fatal(err)
	}
	if isClosed(r.Done()) || r.Err() != nil {
		t.Fatalf("running: done %v, err %v", isClosed(r.Done()), r.Err())
	}
	for i := range 2 {
		if err := r.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if !isClosed(r.Done()) || r.Err() != nil {
		t.Fatalf("closed: done %v, err %v", isClosed(r.Done()), r.Err())
	}
	if err := r.Start(t.Context(), nil, waitRun); !errors.Is(err, lifecycle.ErrStarted) {
		t.Fatalf("second Start: %v, want ErrStarted", err)
	}
}

func TestRunnerStopsWhenItsContextEndsWithTheCause(t *testing.T) {
	var r lifecycle.Runner
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(t.Context())
	if err := r.Start(ctx, nil, waitRun); err != nil {
		t.Fatal(err)
	}
	cancel(cause)
	<-r.Done()
	if !errors.Is(r.Err(), cause) {
		t.Fatalf("Err = %v, want %v", r.Err(), cause)
	}
	if err := r.Close(); !errors.Is(err, cause) {
		t.Fatalf("Close after the context ended = %v, want the cause", err)
	}
}

func TestRunnerAFailingRunStopsTheOthersAndIsErr(t *testing.T) {
	var r lifecycle.Runner
	boom := errors.New("listener failed")
	fail := make(chan struct{})
	failing := func(ctx context.Context) error { <-fail; return boom }
	if err := r.Start(t.Context(), nil, waitRun, failing); err != nil {
		t.Fatal(err)
	}
	close(fail)
	<-r.Done()
	if !errors.Is(r.Err(), boom) {
		t.Fatalf("Err = %v, want %v", r.Err(), boom)
	}
}

func TestRunnerFailedSetupIsStartsErrorAndStops(t *testing.T) {
	var r lifecycle.Runner
	boom := errors.New("etcd unreachable")
	ran := false
	err := r.Start(t.Context(), func(context.Context) error { return boom }, func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, boom) || !errors.Is(r.Err(), boom) || !isClosed(r.Done()) || ran {
		t.Fatalf("Start = %v, Err = %v, done %v, run ran %v", err, r.Err(), isClosed(r.Done()), ran)
	}
}

func TestRunnerCloseBeforeStartNeverStarts(t *testing.T) {
	var r lifecycle.Runner
	if err := r.Close(); err != nil || !isClosed(r.Done()) {
		t.Fatalf("Close before Start: %v, done %v", err, isClosed(r.Done()))
	}
	if err := r.Start(t.Context(), nil, waitRun); !errors.Is(err, lifecycle.ErrClosed) {
		t.Fatalf("Start after Close = %v, want ErrClosed", err)
	}
}

func TestRunnerStopBeforeStartThenCloseClosesDone(t *testing.T) {
	var r lifecycle.Runner
	r.Stop(nil)
	if err := r.Close(); err != nil || !isClosed(r.Done()) {
		t.Fatalf("Stop then Close before Start: %v, done %v", err, isClosed(r.Done()))
	}
}

// slowStart is a component whose setup waits for its context.
type slowStart struct{ lifecycle.Runner }

func (s *slowStart) Start(ctx context.Context) error {
	return s.Runner.Start(ctx, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, waitRun)
}

func TestStartBoundedGivesUpWhenTheStartDeadlineEnds(t *testing.T) {
	c := &slowStart{}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := lifecycle.StartBounded(ctx, t.Context(), c); !errors.Is(err, context.Canceled) {
		t.Fatalf("StartBounded = %v, want context.Canceled", err)
	}
	if !isClosed(c.Done()) {
		t.Fatal("the component still runs after its start was given up")
	}
}
