package ownership_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/toxitest"
	"github.com/idemcoord/idemcoord/ownership"
)

// pausable returns a client that reaches etcd member 0 through a proxy,
// and functions that pause (blackhole every request) and resume it.
func pausable(t *testing.T) (cli *clientv3.Client, pause, resume func()) {
	t.Helper()
	proxy := toxitest.Proxy(t, "etcd-"+strings.ReplaceAll(t.Name(), "/", "_"), strings.TrimPrefix(cluster(t).Endpoints()[0], "http://"))
	cli = client(t, []string{"http://" + proxy.Listen})
	return cli, func() {
			addToxic(t, proxy, `{"name":"pause","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`)
		},
		func() {
			if err := proxy.Toxics.RemoveToxic(context.Background(), "pause"); err != nil {
				t.Fatal(err)
			}
		}
}

// pausableLiveness starts us-east's liveness of instance on cli (a
// pausable client) at the default TTL (2 s) with a short pause budget and
// drift, and closes it when t ends.
func pausableLiveness(t *testing.T, ctx context.Context, cli *clientv3.Client, instance string) *ownership.Liveness {
	t.Helper()
	l, err := startLiveness(ctx, ownership.LivenessConfig{Client: cli, Prefix: prefix(t),
		Region: "us-east", Instance: instance, TTL: 2 * time.Second, PauseBudget: 200 * time.Millisecond,
		Drift: 100 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func addToxic(t *testing.T, p *toxiproxy.Proxy, doc string) {
	t.Helper()
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
}

// A lease the instance cannot prove valid is not live, whatever the
// session and the election say: here etcd still holds it (its real TTL is
// a minute) but no keepalive has been answered for longer than the
// conservative validity on the instance's clock.
func TestLivenessIsNotLiveOnceItsValidityPassedEvenIfCampaignAndSessionSayOtherwise(t *testing.T) {
	ctx := ctxT(t)
	cli, pause, resume := pausable(t)
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := fake.Now()
	l, err := startLiveness(ctx, ownership.LivenessConfig{Client: cli, Prefix: prefix(t),
		Region: "us-east", Instance: "i1", TTL: time.Minute, PauseBudget: time.Second, Drift: 500 * time.Millisecond,
		Clock: fake, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer resume()
	if err := l.Live(); err != nil {
		t.Fatalf("live right after registering: %v", err)
	}
	if want := start.Add(time.Minute - 1500*time.Millisecond); !l.ValidUntil().Equal(want) {
		t.Fatalf("valid until %s, want grant send time + TTL - pause budget - drift = %s", l.ValidUntil(), want)
	}
	e := concurrency.NewElection(l.Session(), prefix(t)+"controller")
	if err := e.Campaign(ctx, "us-east/i1"); err != nil {
		t.Fatal(err)
	}

	pause() // etcd stops answering this instance
	fake.Advance(58 * time.Second)
	if err := l.Live(); err != nil {
		t.Fatalf("58s after the last answered request (validity 58.5s): %v, want live", err)
	}
	fake.Advance(time.Second)
	if err := l.Live(); !errors.Is(err, ownership.ErrNotLive) {
		t.Fatalf("59s after the last answered request: %v, want ErrNotLive", err)
	}
	// Neither etcd's session nor the election noticed anything: acting on
	// them would be acting on an unprovable lease.
	select {
	case <-l.Session().Done():
		t.Fatal("the session ended already; this test needs it still claiming to be alive")
	default:
	}
	if e.Key() == "" {
		t.Fatal("the election forgot its leadership; this test needs it still claiming to lead")
	}
}

// etcd really drops the lease: the instance had already stopped calling
// itself live, and it registers again under a new create revision, which
// a guard taken on the old registration does not match.
func TestLivenessOutlivedByItsLeaseRegistersAgainWithANewCreateRevision(t *testing.T) {
	ctx := ctxT(t)
	cli, pause, resume := pausable(t)
	l := pausableLiveness(t, ctx, cli, "i2")
	oldRev, oldGuard := l.CreateRevision(), l.Guard()
	direct := client(t, cluster(t).Endpoints())
	w := direct.Watch(ctx, l.Key(), clientv3.WithRev(oldRev+1))

	pause() // etcd paused for this instance past the TTL
	for gone := false; !gone; {
		resp, ok := <-w
		if !ok || resp.Err() != nil {
			t.Fatalf("watching the liveness key: %v", resp.Err())
		}
		for _, ev := range resp.Events {
			gone = gone || ev.Type == clientv3.EventTypeDelete
		}
	}
	// etcd expired the lease: the instance must not call itself live, even
	// if its session has not noticed yet.
	if err := l.Live(); !errors.Is(err, ownership.ErrNotLive) {
		t.Fatalf("after etcd expired the lease: Live() = %v, want ErrNotLive", err)
	}
	resume()
	for l.CreateRevision() == 0 || l.CreateRevision() == oldRev {
		select {
		case <-l.Changed():
		case <-ctx.Done():
			t.Fatalf("not registered again after the pause: %v", l.Live())
		}
	}
	if l.CreateRevision() <= oldRev {
		t.Fatalf("registered again at create revision %d, old %d: want a newer one", l.CreateRevision(), oldRev)
	}
	if err := l.Live(); err != nil {
		t.Fatalf("after registering again: %v", err)
	}
	for name, g := range map[string]clientv3.Cmp{"old": oldGuard, "new": l.Guard()} {
		resp, err := direct.Txn(ctx).If(g).Commit()
		if err != nil {
			t.Fatal(err)
		}
		if resp.Succeeded != (name == "new") {
			t.Fatalf("the %s registration's guard held=%v", name, resp.Succeeded)
		}
	}
	ins, err := ownership.Instances(ctx, direct, prefix(t), "us-east")
	if err != nil || len(ins) != 1 || ins[0].Name != "i2" || ins[0].CreateRevision != l.CreateRevision() {
		t.Fatalf("instances of us-east: %+v, %v", ins, err)
	}
	if live, err := ownership.LiveRegions(ctx, direct, prefix(t)); err != nil || len(live) != 1 || live[0] != "us-east" {
		t.Fatalf("live regions: %v, %v", live, err)
	}
}

// At the default TTL (2 s) the instance sends a keepalive every TTL/6, so
// its last answered keepalive is never more than a third of a second
// old: the lease survives a stall or a latency spike of most of a TTL,
// and the conservative validity (TTL - PauseBudget - Drift = 0.75 s past
// each keepalive) never lapses between two of them.
func TestLivenessKeepsAliveSixTimesPerTTLAtTheDefaults(t *testing.T) {
	ctx := ctxT(t)
	fake := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	start := fake.Now()
	cfg := ownership.LivenessConfig{Client: client(t, cluster(t).Endpoints()), Prefix: prefix(t),
		Region: "us-east", Instance: "i3", Clock: fake, Logger: quiet()}
	if every := cfg.KeepAliveInterval(); every != ownership.DefaultLivenessTTL/6 {
		t.Fatalf("keepalive interval %s, want TTL/6 = %s", every, ownership.DefaultLivenessTTL/6)
	}
	l, err := startLiveness(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	validity := ownership.DefaultLivenessTTL - ownership.DefaultPauseBudget - ownership.DefaultClockDrift
	if want := start.Add(validity); !l.ValidUntil().Equal(want) {
		t.Fatalf("valid until %s after registering, want %s", l.ValidUntil(), want)
	}
	every := ownership.DefaultLivenessTTL / 6
	// waitValid waits until the keepalive sent at the fake clock's now
	// was answered (an earlier, late answer extends less).
	waitValid := func(step int) {
		want := fake.Now().Add(validity)
		for {
			changed := l.Changed()
			if l.ValidUntil().Equal(want) {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatalf("step %d: no keepalive sent at %s answered (valid until %s)", step, fake.Now(), l.ValidUntil())
			}
		}
	}
	// The keepalive ticker starts once the loop runs: step the clock
	// until a first keepalive is answered (the loop may not have started
	// at the first step). From then on every step of TTL/6 must bring one
	// keepalive sent at that step.
	for first := false; !first; {
		changed := l.Changed()
		fake.Advance(every)
		select {
		case <-changed:
			first = true
		case <-time.After(200 * time.Millisecond): // the loop not started yet: step again
		case <-ctx.Done():
			t.Fatal("no keepalive answered")
		}
	}
	waitValid(0)
	for i := 1; i <= 3; i++ {
		fake.Advance(every)
		waitValid(i)
		if err := l.Live(); err != nil {
			t.Fatalf("keepalive %d: %v", i, err)
		}
	}
}

// TestAnInstanceWhoseSessionStreamEndsWhileItsLeaseLivesKeepsItsKey: the
// session's own keepalive stream ends by the client's clock after a stall
// of about a second (it keeps alive only every TTL/3, on a 500 ms tick),
// while the instance's own keepalives (every TTL/6) kept the lease alive
// in etcd. Orphan ends the stream here the same way. The instance keeps
// its lease and its key, the same create revision, and stays live. Before,
// it took the ended stream for a lost lease, revoked the live lease and
// registered again: its region's last key gone for a moment (suspect in
// every failover tracker) after short pauses of 1.17 s in the
// short-pause drills.
func TestAnInstanceWhoseSessionStreamEndsWhileItsLeaseLivesKeepsItsKey(t *testing.T) {
	ctx := ctxT(t)
	direct := client(t, cluster(t).Endpoints())
	l := pausableLiveness(t, ctx, direct, "i4")
	old, rev := l.Session(), l.CreateRevision()

	changed := l.Changed()
	old.Orphan() // the session's stream ends; etcd still holds the lease
	for l.Session() == old || l.Session() == nil {
		select {
		case <-changed:
			changed = l.Changed()
		case <-ctx.Done():
			t.Fatalf("the liveness kept the ended session: %v", l.Live())
		}
	}
	if got := l.CreateRevision(); got != rev {
		t.Fatalf("create revision %d after the session's stream ended, want %d: registered again", got, rev)
	}
	if l.Session().Lease() != old.Lease() {
		t.Fatalf("lease %x after the session's stream ended, want the same %x", l.Session().Lease(), old.Lease())
	}
	if err := l.Live(); err != nil {
		t.Fatalf("not live after the session's stream ended: %v", err)
	}
	ins, err := ownership.Instances(ctx, direct, prefix(t), "us-east")
	if err != nil || len(ins) != 1 || ins[0].CreateRevision != rev {
		t.Fatalf("instances of us-east: %+v, %v; want i4 at create revision %d", ins, err, rev)
	}
}
