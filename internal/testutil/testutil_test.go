package testutil

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
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

// TestARefusingAddrRefusesEveryDialAndNoServerCanTakeIt: the address of a
// down peer refuses a dial, and a server asked for that port cannot get
// it while the test holds it (a closed listener's port could be).
func TestARefusingAddrRefusesEveryDialAndNoServerCanTakeIt(t *testing.T) {
	addr := RefusingAddr(t)
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("dial %s succeeded, want refused", addr)
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial %s: %v, want connection refused", addr, err)
	}
	if ln, err := net.Listen("tcp", addr); err == nil {
		ln.Close()
		t.Errorf("a server could listen on %s", addr)
	}
}
