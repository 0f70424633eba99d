package ownership_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/ownership"
)

// An instance etcd stops answering says it is cut off once its own proof
// of the lease has run out and its requests have gone unanswered over
// CutOffSpan; never while it is live, and no longer once etcd answers it
// again and it registers.
func TestAnInstanceEtcdStopsAnsweringSaysItIsCutOffOnlyOnceItsLeaseIsUnproven(t *testing.T) {
	ctx := ctxT(t)
	cli, pause, resume := pausable(t)
	l := pausableLiveness(t, ctx, cli, "cut")
	if l.CutOff() {
		t.Fatal("cut off right after registering")
	}
	pause()
	// etcd's time (the lease's TTL), not a sleep: poll until the instance
	// says it, and check what it may say it on.
	testutil.Eventually(t, 10*time.Second, testutil.Cond(l.CutOff))
	if err := l.Live(); !errors.Is(err, ownership.ErrNotLive) {
		t.Fatalf("cut off while Live() = %v: want ErrNotLive first", err)
	}
	resume()
	testutil.Eventually(t, 10*time.Second, l.Live)
	if l.CutOff() {
		t.Fatal("still cut off after registering again")
	}
}

// A process resumed after a pause finds the one request it had in flight
// unanswered, sent before the pause: that is not a cut (the next request
// is answered by an etcd it can reach). Only unanswered requests sent
// CutOffSpan apart, with no answer to any request sent since the first,
// are; an answer to one sent before the first changes nothing.
func TestOneUnansweredRequestIsNotACutOff(t *testing.T) {
	ctx := ctxT(t)
	cli, pause, resume := pausable(t)
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := startLiveness(ctx, ownership.LivenessConfig{Client: cli, Prefix: prefix(t),
		Region: "us-east", Instance: "resumed", TTL: time.Minute, PauseBudget: time.Second,
		Drift: 500 * time.Millisecond, Clock: fake, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer resume()
	pause() // nothing this test does reaches etcd from here on
	t0 := fake.Now()
	fake.Set(t0.Add(10 * time.Minute)) // the proof ran out: only the evidence decides
	if err := l.Live(); !errors.Is(err, ownership.ErrNotLive) {
		t.Fatalf("Live() = %v, want ErrNotLive", err)
	}
	l.NoteUnanswered(t0)
	if l.CutOff() {
		t.Fatal("cut off on one unanswered request")
	}
	l.NoteUnanswered(t0.Add(ownership.CutOffSpan - time.Millisecond))
	if l.CutOff() {
		t.Fatal("cut off on unanswered requests less than CutOffSpan apart")
	}
	l.NoteAnswered(t0.Add(-time.Second))
	l.NoteUnanswered(t0.Add(ownership.CutOffSpan))
	if !l.CutOff() {
		t.Fatal("not cut off on unanswered requests CutOffSpan apart (an earlier answer does not count)")
	}
	l.NoteAnswered(t0.Add(time.Millisecond))
	if l.CutOff() {
		t.Fatal("still cut off after an answer to a request sent since the first unanswered one")
	}
}
