package clock

import (
	"context"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestFakeTimerFiresOnlyWhenAdvancedPastDeadline(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("fired before its deadline")
	default:
	}
	f.Advance(time.Second)
	select {
	case got := <-tm.C():
		if want := epoch.Add(10 * time.Second); !got.Equal(want) {
			t.Fatalf("fired at %v, want %v", got, want)
		}
	default:
		t.Fatal("did not fire at its deadline")
	}
	if f.Waiters() != 0 {
		t.Fatalf("Waiters = %d after firing, want 0", f.Waiters())
	}
}

func TestFakeTimerStopAndReset(t *testing.T) {
	f := NewFake(epoch)
	tm := f.NewTimer(time.Second)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer reported false")
	}
	f.Advance(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
	tm.Reset(time.Second)
	f.Advance(time.Second)
	select {
	case <-tm.C():
	default:
		t.Fatal("reset timer did not fire")
	}
}

func TestFakeTickerFiresEveryPeriodAndDropsWhenFull(t *testing.T) {
	f := NewFake(epoch)
	tk := f.NewTicker(time.Second)
	defer tk.Stop()
	f.Advance(time.Second)
	if got := <-tk.C(); !got.Equal(epoch.Add(time.Second)) {
		t.Fatalf("tick at %v", got)
	}
	f.Advance(5 * time.Second) // five ticks due, channel holds one
	if got := <-tk.C(); !got.Equal(epoch.Add(2 * time.Second)) {
		t.Fatalf("first buffered tick at %v, want +2s", got)
	}
	select {
	case <-tk.C():
		t.Fatal("a full channel kept more than one tick")
	default:
	}
	if !f.Now().Equal(epoch.Add(6 * time.Second)) {
		t.Fatalf("Now = %v", f.Now())
	}
}

func TestSleepReturnsWhenClockAdvancesOrContextEnds(t *testing.T) {
	f := NewFake(epoch)
	done := make(chan error, 1)
	go func() { done <- Sleep(context.Background(), f, time.Minute) }()
	f.BlockUntil(1)
	f.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatalf("Sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- Sleep(ctx, f, time.Minute) }()
	f.BlockUntil(1)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Sleep after cancel = %v, want context.Canceled", err)
	}
}

func TestSetNeverMovesBackwards(t *testing.T) {
	f := NewFake(epoch)
	f.Set(epoch.Add(-time.Hour))
	if !f.Now().Equal(epoch) {
		t.Fatalf("Now = %v, want %v", f.Now(), epoch)
	}
}
