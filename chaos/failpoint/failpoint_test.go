package failpoint

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/clock"
)

func mixedSpec() Spec {
	return Spec{Kinds: Kinds, Count: 8, Regions: []string{"us-east", "eu-west", "ap-south"},
		Duration: 10 * time.Minute, Warmup: 30 * time.Second, Cooldown: time.Minute,
		MinFor: 5 * time.Second, MaxFor: 20 * time.Second, Lease: 10 * time.Second}
}

func TestPlanIsDeterministicPerSeed(t *testing.T) {
	a, err := Plan(mixedSpec(), 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Plan(mixedSpec(), 42)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("same seed, different schedules (-first +second):\n%s", diff)
	}
	c, _ := Plan(mixedSpec(), 43)
	if cmp.Equal(a.Faults, c.Faults) {
		t.Fatalf("seeds 42 and 43 gave the same schedule: %v", a.Faults)
	}
}

func TestPlanKeepsFaultsInsideTheWindowAndApart(t *testing.T) {
	spec := mixedSpec()
	for seed := uint64(1); seed <= 50; seed++ {
		s, err := Plan(spec, seed)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Faults) != spec.Count {
			t.Fatalf("seed %d: %d faults, want %d", seed, len(s.Faults), spec.Count)
		}
		for i, f := range s.Faults {
			if f.At < spec.Warmup || f.End() > spec.Duration-spec.Cooldown {
				t.Errorf("seed %d: fault %d %v outside the window", seed, i, f)
			}
			if i > 0 && f.At < s.Faults[i-1].End() {
				t.Errorf("seed %d: fault %d overlaps the previous one", seed, i)
			}
			if f.Kind == PauseRegion && f.For <= spec.Lease {
				t.Errorf("seed %d: pause of %v does not outlast the %v lease", seed, f.For, spec.Lease)
			}
			if (f.Kind == KillEtcdLeader) != (f.Region == "") {
				t.Errorf("seed %d: fault %v has the wrong target", seed, f)
			}
		}
	}
}

func TestSpecValidateNamesEveryBadField(t *testing.T) {
	err := Spec{Kinds: []Kind{"meteor"}, Count: 3, MinFor: time.Second, MaxFor: time.Millisecond}.Validate()
	if !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("err = %v, want ErrInvalidSpec", err)
	}
	for _, field := range []string{"kinds[0]", "regions", "max_for"} {
		if !strings.Contains(err.Error(), field+":") {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

// journal is an Injector that writes down what it was asked to do.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) Inject(_ context.Context, f Fault) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if f.Kind == ClockSkew {
		return ErrUnsupported
	}
	j.calls = append(j.calls, "inject "+f.String())
	return nil
}

func (j *journal) Heal(_ context.Context, f Fault) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, "heal "+f.String())
	return nil
}

func TestRunInjectsAndHealsOnScheduleAndRecordsWindows(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	sched := Schedule{Faults: []Fault{
		{Kind: KillRegion, Region: "us-east", At: time.Second, For: 2 * time.Second},
		{Kind: ClockSkew, Region: "eu-west", At: 4 * time.Second, For: time.Second, Skew: time.Second},
		{Kind: KillEtcdLeader, At: 6 * time.Second, For: time.Second},
	}}
	j := &journal{}
	rec := history.NewRecorder()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), sched, j, rec, clk, Observer{}) }()
	for range 4 { // the waits: until 1s, 2s of kill, until 6s, 1s of etcd
		clk.BlockUntil(1)
		clk.Advance(2 * time.Second)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"inject " + sched.Faults[0].String(), "heal " + sched.Faults[0].String(),
		"inject " + sched.Faults[2].String(), "heal " + sched.Faults[2].String()}
	if diff := cmp.Diff(want, j.calls); diff != "" {
		t.Errorf("injector calls (-want +got):\n%s", diff)
	}
	faults := rec.History().Filter(history.KindFault)
	if len(faults) != 3 || !faults[1].Skipped || faults[0].Skipped || !strings.Contains(faults[1].Detail, "not injected") {
		t.Errorf("recorded fault windows = %+v, want 3 with the skew marked not injected", faults)
	}
	if k := faults[0]; k.Effective < k.Call || k.Effective > k.Return || k.Call == 0 {
		t.Errorf("kill window: call %d, effective %d, return %d; want the injection's effect recorded inside its window", k.Call, k.Effective, k.Return)
	}
}

// TestPlanCutsARegionFromAnotherAndKeepsShortPausesShort: a cut_peer
// fault names a peer other than its region, and its description says
// which; a short_pause is never stretched past the lease as a
// pause_region is, and never lasts more than ShortPauseMax, whatever
// max_for allows.
func TestPlanCutsARegionFromAnotherAndKeepsShortPausesShort(t *testing.T) {
	spec := Spec{Kinds: []Kind{CutPeer, ShortPause}, Count: 8, Regions: []string{"us-east", "eu-west", "ap-south"},
		Duration: 2 * time.Minute, MinFor: 800 * time.Millisecond, MaxFor: 3 * time.Second, Lease: 3 * time.Second}
	for seed := range uint64(20) {
		sched, err := Plan(spec, seed)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range sched.Faults {
			switch f.Kind {
			case CutPeer:
				if f.Peer == "" || f.Peer == f.Region || !strings.Contains(f.String(), f.Region+" from "+f.Peer) {
					t.Errorf("seed %d: %s: peer %q, want another region, named", seed, f, f.Peer)
				}
			case ShortPause:
				if f.For > ShortPauseMax {
					t.Errorf("seed %d: %s lasts %v, above %v", seed, f, f.For, ShortPauseMax)
				}
			}
		}
	}
}

// slowLoss is an Injector whose injection goes on after its fault took
// hold, as a region loss stops the region's etcd and store members after
// its idemd died: it marks the effect, then notes the history's time
// once that time has moved on.
type slowLoss struct{ rec *history.Recorder }

func (s *slowLoss) Inject(ctx context.Context, _ Fault) error {
	TookEffect(ctx)
	after := s.rec.Now()
	for s.rec.Now() == after { // the rest of the injection's work
	}
	s.rec.Add(history.Operation{Kind: history.KindProbe, Call: after, Return: after, Detail: "after the effect"})
	return nil
}

func (s *slowLoss) Heal(context.Context, Fault) error { return nil }

// TestAFaultTakesEffectWhenItsInjectionSaysSoNotWhenTheInjectionReturns:
// a region loss's failover is measured from its idemd's death, not from
// the end of an injection that still stops its other parts afterwards
// (region-loss-full reported failover times of -0.8 s: the moved actors
// were served before the injection returned).
func TestAFaultTakesEffectWhenItsInjectionSaysSoNotWhenTheInjectionReturns(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	rec := history.NewRecorder()
	sched := Schedule{Faults: []Fault{{Kind: RegionLossFull, Region: "us-east", At: 0, For: time.Second}}}
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), sched, &slowLoss{rec}, rec, clk, Observer{}) }()
	clk.BlockUntil(1)
	clk.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	faults, marks := rec.History().Filter(history.KindFault), rec.History().Filter(history.KindProbe)
	if len(faults) != 1 || len(marks) != 1 {
		t.Fatalf("recorded %d faults and %d marks, want 1 and 1", len(faults), len(marks))
	}
	if f := faults[0]; f.Effective < f.Call || f.Effective > marks[0].Call {
		t.Errorf("fault call %d, effective %d; the injection marked its effect before %d", f.Call, f.Effective, marks[0].Call)
	}
}
