package client

import (
	"testing"
	"time"
)

var breakerEpoch = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// TestTrippedRegionIsProbedOnlyAfterItsCooldownAndOnce: one failure opens
// the breaker; the region is unusable until breakerCooldown has passed on
// the clock, then exactly one caller is told to probe it while it stays
// unusable; a failed probe doubles the wait, a good one closes it.
func TestTrippedRegionIsProbedOnlyAfterItsCooldownAndOnce(t *testing.T) {
	var b breaker
	now := breakerEpoch
	if ok, probe := b.usable(now); !ok || probe {
		t.Fatalf("new breaker usable = %v, probe %v; want usable", ok, probe)
	}
	b.failed(now)
	if ok, probe := b.usable(now.Add(breakerCooldown - time.Millisecond)); ok || probe {
		t.Fatalf("1 ms before the cooldown ends: usable %v, probe %v; want neither", ok, probe)
	}
	if ok, probe := b.usable(now.Add(breakerCooldown)); ok || !probe {
		t.Fatalf("at the cooldown's end: usable %v, probe %v; want a probe, not usable", ok, probe)
	}
	if ok, probe := b.usable(now.Add(breakerCooldown)); ok || probe {
		t.Fatalf("while probing: usable %v, probe %v; want neither (one probe at a time)", ok, probe)
	}
	now = now.Add(breakerCooldown)
	b.probed(now, false)
	if ok, probe := b.usable(now.Add(2*breakerCooldown - time.Millisecond)); ok || probe {
		t.Fatalf("after a failed probe, before twice the cooldown: usable %v, probe %v; want neither", ok, probe)
	}
	if _, probe := b.usable(now.Add(2 * breakerCooldown)); !probe {
		t.Fatal("no second probe after twice the cooldown")
	}
	b.probed(now.Add(2*breakerCooldown), true)
	if ok, _ := b.usable(now.Add(2 * breakerCooldown)); !ok {
		t.Fatal("not usable after a good probe")
	}
}

// TestFailedProbesBackOffToTheCap: a region that stays dead is probed at
// doubling intervals, never more rarely than breakerMaxCooldown.
func TestFailedProbesBackOffToTheCap(t *testing.T) {
	var b breaker
	now := breakerEpoch
	b.failed(now)
	var waits []time.Duration
	for range 8 {
		until := b.until()
		waits = append(waits, until.Sub(now))
		now = until
		if _, probe := b.usable(now); !probe {
			t.Fatalf("no probe at %v", now)
		}
		b.probed(now, false)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i, w := range want {
		if waits[i] != w*time.Second {
			t.Fatalf("waits = %v; want %v seconds", waits, want)
		}
	}
}

// TestSwitchBudgetAllowsABurstThenOneSwitchPerTenAnswers: half the bucket
// may be spent at once; after that, only answers earn switches back, one
// per ten answers, so a refusing region cannot turn each intent into
// several attempts.
func TestSwitchBudgetAllowsABurstThenOneSwitchPerTenAnswers(t *testing.T) {
	b := newBudget()
	for i := range 5 {
		if !b.take() {
			t.Fatalf("switch %d of the burst refused", i+1)
		}
	}
	if b.take() {
		t.Fatal("a sixth switch allowed with half the bucket spent")
	}
	for range 9 {
		b.refill()
	}
	if b.take() {
		t.Fatal("a switch allowed after 9 answers; want one per 10")
	}
	b.refill()
	if !b.take() {
		t.Fatal("no switch after 10 answers")
	}
	if b.take() {
		t.Fatal("two switches for 10 answers")
	}
}
