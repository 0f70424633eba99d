package failover_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
)

// step is one move of a region-state scenario: an instance of us-east
// registers, vanishes (its lease revoked) or re-registers (a new key,
// hence a new create revision), or the clock moves; then the tracker
// refreshes and us-east must be in want.
type step struct {
	do   string // "up NAME", "down NAME", "leave NAME", "again NAME", "wait"
	d    time.Duration
	want failover.RegionState
}

const (
	confirm = 2 * time.Second
	hold    = 10 * time.Second
	grace   = 15 * time.Second
)

func TestRegionStatesFollowLivenessKeysByCreateRevisionAndTheClock(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
	}{
		{"a live region is healthy", []step{{do: "up a", want: failover.Healthy}, {do: "wait", d: time.Hour, want: failover.Healthy}}},
		{"no instance is suspect at once and failed after the confirmation delay", []step{
			{do: "up a", want: failover.Healthy},
			{do: "down a", want: failover.Suspect},
			{do: "wait", d: confirm - time.Millisecond, want: failover.Suspect},
			{do: "wait", d: time.Millisecond, want: failover.Failed},
		}},
		{"an instance back before the confirmation is healthy again", []step{
			{do: "up a", want: failover.Healthy},
			{do: "down a", want: failover.Suspect},
			{do: "up b", want: failover.Healthy},
			{do: "wait", d: time.Hour, want: failover.Healthy},
		}},
		{"one of two instances gone is still healthy", []step{
			{do: "up a"}, {do: "up b", want: failover.Healthy},
			{do: "down a", want: failover.Healthy},
		}},
		{"a failed region recovers after its instances stayed for the hold time", []step{
			{do: "up a", want: failover.Healthy},
			{do: "down a", want: failover.Suspect},
			{do: "wait", d: confirm, want: failover.Failed},
			{do: "up a", want: failover.Recovering},
			{do: "wait", d: hold - time.Millisecond, want: failover.Recovering},
			{do: "wait", d: time.Millisecond, want: failover.Healthy},
		}},
		{"a re-registered instance restarts the hold: compared by create revision, not presence", []step{
			{do: "up a", want: failover.Healthy},
			{do: "down a"}, {do: "wait", d: confirm, want: failover.Failed},
			{do: "up a", want: failover.Recovering},
			{do: "wait", d: hold - time.Second, want: failover.Recovering},
			{do: "again a", want: failover.Recovering}, // present all along, but a new registration
			{do: "wait", d: time.Second, want: failover.Recovering},
			{do: "wait", d: hold - time.Second, want: failover.Healthy},
		}},
		{"a recovering region that loses its instances is failed again", []step{
			{do: "up a"}, {do: "down a"}, {do: "wait", d: confirm, want: failover.Failed},
			{do: "up a", want: failover.Recovering},
			{do: "down a", want: failover.Failed},
		}},
		{"a region whose last instance left cleanly is failed at once", []step{
			{do: "up a", want: failover.Healthy},
			{do: "leave a", want: failover.Failed},
			{do: "up a", want: failover.Recovering},
		}},
		{"a region whose instances all left one by one is failed at once", []step{
			{do: "up a"}, {do: "up b", want: failover.Healthy},
			{do: "leave a", want: failover.Healthy},
			{do: "leave b", want: failover.Failed},
		}},
		{"an instance that left does not spare the confirmation to the one that crashed after it", []step{
			{do: "up a"}, {do: "up b", want: failover.Healthy},
			{do: "leave a", want: failover.Healthy},
			{do: "down b", want: failover.Suspect},
			{do: "wait", d: confirm - time.Millisecond, want: failover.Suspect},
			{do: "wait", d: time.Millisecond, want: failover.Failed},
		}},
		{"a region never seen alive is failed only after the startup grace", []step{
			{do: "wait", want: failover.Suspect},
			{do: "wait", d: confirm, want: failover.Suspect},
			{do: "wait", d: grace - confirm, want: failover.Failed},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			cli, pfx := client(t), prefix(t)
			fake := clock.NewFake(epoch0())
			tr, err := failover.NewTracker(failover.Config{Client: cli, Topology: topology(t), Prefix: pfx,
				ConfirmDelay: confirm, HoldTime: hold, StartupGrace: grace, Clock: fake, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			live := map[string]*member{}
			for i, s := range tc.steps {
				verb, name, _ := strings.Cut(s.do, " ")
				switch verb {
				case "up":
					live[name] = instance(t, cli, pfx, "us-east", name)
				case "down":
					live[name].kill()
				case "leave":
					live[name].l.Leave()
				case "again":
					live[name].kill()
					live[name] = instance(t, cli, pfx, "us-east", name)
				case "wait":
					fake.Advance(s.d)
				default:
					t.Fatalf("unknown step %q", s.do)
				}
				states, err := tr.Refresh(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if s.want != "" && states["us-east"] != s.want {
					t.Fatalf("step %d (%s %s): us-east %s, want %s", i, s.do, s.d, states["us-east"], s.want)
				}
			}
		})
	}
}

// TestATrackerSeesAFailureWhenItsConfirmationFallsDueNotAPollLater: a
// running tracker (every instance has one, leading or not; the gateways'
// waits and /readyz read it) re-reads when a suspect region's
// confirmation falls due, without waiting for its next poll (here an
// hour away).
func TestATrackerSeesAFailureWhenItsConfirmationFallsDueNotAPollLater(t *testing.T) {
	ctx := ctxT(t)
	cli, pfx := client(t), prefix(t)
	fake := clock.NewFake(epoch0())
	tr, err := failover.NewTracker(failover.Config{Client: cli, Topology: topology(t), Prefix: pfx,
		ConfirmDelay: confirm, PollInterval: time.Hour, Clock: fake, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	a := instance(t, cli, pfx, "us-east", "a")
	for _, r := range regions[1:] {
		instance(t, cli, pfx, r, "a")
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := tr.Start(rctx); err != nil {
		t.Fatal(err)
	}
	waitState := func(want failover.RegionState) {
		t.Helper()
		for {
			changed := tr.Changed()
			if tr.State("us-east") == want {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("us-east stayed %s, want %s", tr.State("us-east"), want)
			}
		}
	}
	waitState(failover.Healthy)
	a.kill() // the watch sees the delete: suspect at once
	waitState(failover.Suspect)
	timed := make(chan struct{})
	go func() { fake.BlockUntil(2); close(timed) }() // the poll's ticker and the confirmation's timer
	select {
	case <-timed:
	case <-ctx.Done():
		t.Fatal("the tracker set no timer for the confirmation: only its poll would see the failure")
	}
	fake.Advance(confirm)
	waitState(failover.Failed)
}
