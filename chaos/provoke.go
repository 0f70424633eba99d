package chaos

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/probe"
	"github.com/idemcoord/idemcoord/chaos/traffic"
	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// A green verdict needs an ambiguous outcome resolved, a takeover and a
// shard moved under load (validate.Coverage). A scenario's faults bring
// them only at some seeds (a reset that hits no COMMIT, a crash point
// inside a COMMIT that leaves no claim, a schedule without a region loss),
// so the drill provokes each itself, once per run, whatever the seed: the
// verdict then says something about the coordinator, not about the seed's
// luck.

// provokeAttempts bounds the lost-answer probe's tries: each new try uses
// a new key, for when the answer beat the dropped connection.
const provokeAttempts = 3

// plannedMoveDrain is how long the drill's planned move lets the old owner
// finish what it started, as a failback's drain.
const plannedMoveDrain = 2 * time.Second

// deadClaimLease is the lease of the takeover probe's dead claim: the
// gateways answer 409 for that long, then take it over.
const deadClaimLease = time.Second

// drillEndpoint is the endpoint every drill cluster serves on drillPath,
// as its configuration names it and fingerprints its requests
// (chaos/cluster/process_config.go, devcluster): the takeover probe's dead
// claim must match what the gateway computes.
var drillEndpoint = probe.GatewayEndpoint{Name: "create-payment",
	Fingerprint: idempotency.FingerprintOptions{Exclude: []string{"/client_timestamp"}}}

// provokeResolveTimeout bounds the retries that resolve the lost answer:
// past a lease, a takeover and a failover of its shard.
const provokeResolveTimeout = 60 * time.Second

// provokeAt is when, in a main phase of d, the drill provokes what its
// verdict needs, and how long its planned move keeps the shard away:
// a quarter of the way to the first fault, so traffic is flowing, and the
// move away and back (the dwell is another quarter, at most
// maxPlannedMoveDwell) is done before any fault is in force (a failover
// pass must not meet the planned move's drain). With no fault scheduled,
// the first fault counts as being at three quarters of d.
func provokeAt(sched failpoint.Schedule, d time.Duration) (at, dwell time.Duration) {
	first := d * 3 / 4
	if len(sched.Faults) > 0 {
		first = slices.MinFunc(sched.Faults, func(a, b failpoint.Fault) int { return cmp.Compare(a.At, b.At) }).At
	}
	return first / 4, min(first/4, maxPlannedMoveDwell)
}

// maxPlannedMoveDwell caps how long the planned move keeps its shard away
// from its owner.
const maxPlannedMoveDwell = 2 * time.Second

// provoker is what the provocation acts through.
type provoker struct {
	c      cluster.Cluster
	rec    *history.Recorder
	seed   uint64
	path   string
	store  store.Backend   // the probes' own store (as the gateways see it), for the dead claim
	actors []traffic.Actor // the workload's actors, whose shards are loaded
}

// run waits until at (on the recorder's clock), then, concurrently, sends
// a request whose answer it drops and resolves it, leaves a dead claim
// for a gateway to take over, and moves a loaded shard away and back.
// Failures are returned for the stage errors; they
// record nothing, and the coverage then says what is missing.
func (p provoker) run(ctx, mainCtx context.Context, at, dwell time.Duration) error {
	t := time.NewTimer(max(0, at-time.Duration(p.rec.Now())))
	defer t.Stop()
	select {
	case <-t.C:
	case <-mainCtx.Done():
		return nil
	}
	gws, err := p.gateways()
	if err != nil {
		return err
	}
	errs := make(chan error, 3)
	go func() { errs <- p.lostAnswer(ctx, gws) }()
	go func() { errs <- p.takeover(ctx, gws) }()
	go func() { errs <- p.move(ctx, dwell) }()
	return errors.Join(<-errs, <-errs, <-errs)
}

// subject is the token subject of the drill's own requests.
func (p provoker) subject() string { return fmt.Sprintf("drill-%d-probe", p.seed) }

// gateways returns a one-attempt client per region, starting at a region
// the seed picks, for the drill's own requests.
func (p provoker) gateways() ([]probe.Gateway, error) {
	httpc := &http.Client{Timeout: traffic.DefaultAttemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	regions := p.c.Regions()
	start := rand.New(rand.NewPCG(p.seed, 0xab1e)).IntN(len(regions))
	subject := p.subject()
	var gws []probe.Gateway
	for i := range regions {
		r := regions[(start+i)%len(regions)]
		cl, err := client.New(client.Config{BaseURL: r.URL, HTTPClient: httpc, MaxAttempts: 1,
			TokenSource: func(ctx context.Context) (string, error) { return p.c.Token(ctx, subject) }})
		if err != nil {
			return nil, fmt.Errorf("chaos: probe client for %s: %w", r.Name, err)
		}
		gws = append(gws, probe.Gateway{Name: r.Name, Client: cl})
	}
	return gws, nil
}

// intent is the drill's own intent number n: a payment like the
// traffic's, under the probe's actor, with a key and reference of its own.
func (p provoker) intent(n int64) probe.Intent {
	shards := shard.DefaultCount
	if s, ok := p.c.(cluster.Shards); ok {
		shards = s.Shards()
	}
	actor := p.c.Tenant() + "/" + p.subject()
	rng := rand.New(rand.NewPCG(p.seed, uint64(n)))
	ref := fmt.Sprintf("ref-%d-probe-%d", p.seed, n)
	body := traffic.Body{Amount: fmt.Sprintf("%d.%02d", 1+rng.IntN(999), rng.IntN(100)), Currency: "EUR", Reference: ref}
	return probe.Intent{Actor: actor, Shard: shard.Of(actor, shards), N: n, Path: p.path,
		Key: fmt.Sprintf("drill-%d-probe-%d", p.seed, n), Reference: ref, Body: body.Bytes()}
}

// lostAnswer provokes an ambiguous outcome through a gateway and resolves
// it (probe.LostAnswer), with a new key when an answer beat the drop.
func (p provoker) lostAnswer(ctx context.Context, gws []probe.Gateway) error {
	ctx, cancel := context.WithTimeout(ctx, provokeResolveTimeout)
	defer cancel()
	var err error
	for n := int64(1); n <= provokeAttempts; n++ {
		if _, err = probe.LostAnswer(ctx, p.rec, gws, p.intent(n)); !errors.Is(err, probe.ErrAnswered) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("chaos: lost-answer probe: %w", err)
	}
	return nil
}

// takeoverIntent numbers the takeover probe's intent, apart from the
// lost-answer probe's.
const takeoverIntent = 100

// takeover leaves a dead claim and resolves it through the gateways,
// which take it over once its lease expired (probe.Takeover).
func (p provoker) takeover(ctx context.Context, gws []probe.Gateway) error {
	ctx, cancel := context.WithTimeout(ctx, provokeResolveTimeout)
	defer cancel()
	if _, err := probe.Takeover(ctx, p.store, p.rec, gws, drillEndpoint, p.intent(takeoverIntent), deadClaimLease); err != nil {
		return fmt.Errorf("chaos: takeover probe: %w", err)
	}
	return nil
}

// move moves the shard of one of the workload's actors (chosen by the
// seed) from its owner to another region and, dwell later, back, each a
// planned, drained transfer, while the traffic runs. A cluster that cannot move
// shards (no cluster.Mover or cluster.Directory) is left alone.
func (p provoker) move(ctx context.Context, dwell time.Duration) error {
	mv, ok := p.c.(cluster.Mover)
	dir, ok2 := p.c.(cluster.Directory)
	if !ok || !ok2 || len(p.actors) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(p.seed, 0x3a7e))
	shard := p.actors[rng.IntN(len(p.actors))].Shard
	entries, err := dir.Directory(ctx)
	if err != nil {
		return fmt.Errorf("chaos: planned-move probe: read the directory: %w", err)
	}
	from := entries[shard].Owner
	if from == "" {
		return fmt.Errorf("chaos: planned-move probe: shard %d has no owner", shard)
	}
	var others []string
	for _, r := range p.c.Regions() {
		if r.Name != from {
			others = append(others, r.Name)
		}
	}
	if len(others) == 0 {
		return nil
	}
	to := others[rng.IntN(len(others))]
	for i, leg := range [][2]string{{from, to}, {to, from}} {
		if i > 0 {
			if err := clock.Sleep(ctx, clock.Real(), dwell); err != nil {
				return err
			}
		}
		call := p.rec.Now()
		if err := mv.MoveShard(ctx, shard, leg[1], plannedMoveDrain); err != nil {
			return fmt.Errorf("chaos: planned-move probe: shard %d to %s: %w", shard, leg[1], err)
		}
		p.rec.Add(history.Operation{Kind: history.KindProbe, Probe: history.ProbePlannedMove, Call: call, Return: p.rec.Now(),
			Shard: shard, Detail: fmt.Sprintf("planned move %s -> %s, drained for at most %s", leg[0], leg[1], plannedMoveDrain)})
	}
	return nil
}
