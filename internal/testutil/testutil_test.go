package testutil

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPollReturnsOnceTheConditionHoldsAndItsLastErrorOtherwise.
func TestPollReturnsOnceTheConditionHoldsAndItsLastErrorOtherwise(t *testing.T) {
	var n atomic.Int32
	if err := Poll(time.Minute, Cond(func() bool { return n.Add(1) == 3 })); err != nil || n.Load() != 3 {
		t.Errorf("Poll = %v after %d calls, want nil after 3", err, n.Load())
	}
	last := errors.New("still 409")
	if err := Poll(0, func() error { return last }); err != last {
		t.Errorf("Poll of a condition that never holds = %v, want its last error", err)
	}
}

// TestLogBufferTakesConcurrentWrites (run with -race).
func TestLogBufferTakesConcurrentWrites(t *testing.T) {
	var b LogBuffer
	log := b.Logger()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			log.Info("x")
			_ = b.String()
		}()
	}
	wg.Wait()
	if got := len(b.String()); got == 0 {
		t.Error("nothing written")
	}
}
