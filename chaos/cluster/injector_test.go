package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

// bare implements only the topology.
type bare struct{ calls []string }

func (b *bare) Regions() []Region                             { return nil }
func (b *bare) Token(context.Context, string) (string, error) { return "", nil }
func (b *bare) Tenant() string                                { return "t" }
func (b *bare) DSN() string                                   { return "" }
func (b *bare) Stop(context.Context) error                    { return nil }
func (b *bare) log(format string, args ...any) {
	b.calls = append(b.calls, fmt.Sprintf(format, args...))
}
func (b *bare) Kill(_ context.Context, r string) error       { b.log("kill %s", r); return nil }
func (b *bare) Restart(_ context.Context, r string) error    { b.log("restart %s", r); return nil }
func (b *bare) Pause(_ context.Context, r string) error      { b.log("pause %s", r); return nil }
func (b *bare) Resume(_ context.Context, r string) error     { b.log("resume %s", r); return nil }
func (b *bare) Leader(context.Context) (string, error)       { return "m2", nil }
func (b *bare) KillMember(_ context.Context, m string) error { b.log("kill member %s", m); return nil }
func (b *bare) RestartMember(_ context.Context, m string) error {
	b.log("restart member %s", m)
	return nil
}
func (b *bare) Arm(_ context.Context, r, p string) error    { b.log("arm %s %s", r, p); return nil }
func (b *bare) Disarm(_ context.Context, r, p string) error { b.log("disarm %s %s", r, p); return nil }
func (b *bare) Skew(_ context.Context, r string, d time.Duration) error {
	b.log("skew %s %v", r, d)
	return nil
}
func (b *bare) Cut(_ context.Context, r string, l failpoint.Link) error {
	b.log("cut %s %s", r, l)
	return nil
}
func (b *bare) Restore(_ context.Context, r string, l failpoint.Link) error {
	b.log("restore %s %s", r, l)
	return nil
}
func (b *bare) Slow(_ context.Context, r string, l failpoint.Link, lat, jit time.Duration) error {
	b.log("slow %s %s %v %v", r, l, lat, jit)
	return nil
}
func (b *bare) Reset(_ context.Context, r string, l failpoint.Link) error {
	b.log("reset %s %s", r, l)
	return nil
}
func (b *bare) CutTo(_ context.Context, r string, l failpoint.Link, to string) error {
	b.log("cut %s %s to %s", r, l, to)
	return nil
}
func (b *bare) RestoreTo(_ context.Context, r string, l failpoint.Link, to string) error {
	b.log("restore %s %s to %s", r, l, to)
	return nil
}

// topologyOnly hides every fault family of a bare.
type topologyOnly struct{ Cluster }

func TestInjectorMapsEachFaultToItsFamily(t *testing.T) {
	ctx := context.Background()
	c := &bare{}
	inj := Injector(c)
	faults := []failpoint.Fault{
		{Kind: failpoint.KillRegion, Region: "a"},
		{Kind: failpoint.PauseRegion, Region: "a"},
		{Kind: failpoint.CutBoth, Region: "b"},
		{Kind: failpoint.Latency, Region: "b", Link: failpoint.LinkPeer, Latency: time.Millisecond},
		{Kind: failpoint.KillEtcdLeader},
		{Kind: failpoint.CrashPoint, Region: "c", Point: failpoint.PointDuringCommit},
		{Kind: failpoint.ClockSkew, Region: "c", Skew: time.Second},
		{Kind: failpoint.ShortPause, Region: "a"},
		{Kind: failpoint.CutPeer, Region: "a", Peer: "b"},
	}
	for _, f := range faults {
		if err := inj.Inject(ctx, f); err != nil {
			t.Fatal(err)
		}
		if err := inj.Heal(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"kill a", "restart a", "pause a", "resume a", "cut b etcd", "cut b sql", "restore b etcd",
		"restore b sql", "slow b peer 1ms 0s", "restore b peer", "kill member m2", "restart member m2",
		"arm c during_commit", "disarm c during_commit", "skew c 1s", "skew c 0s", "pause a", "resume a",
		"cut a peer to b", "cut b peer to a", "restore a peer to b", "restore b peer to a"}
	if diff := cmp.Diff(want, c.calls); diff != "" {
		t.Errorf("cluster calls (-want +got):\n%s", diff)
	}

	none := Injector(topologyOnly{c})
	for _, f := range faults {
		if err := none.Inject(ctx, f); !errors.Is(err, failpoint.ErrUnsupported) {
			t.Errorf("Inject(%s) on a topology-only cluster = %v, want ErrUnsupported", f, err)
		}
	}
}
