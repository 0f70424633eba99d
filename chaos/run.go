package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/report"
	"github.com/idemcoord/idemcoord/chaos/scenario"
	"github.com/idemcoord/idemcoord/chaos/traffic"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// ErrViolations is returned (wrapped) by Result.Err when an invariant broke.
var ErrViolations = errors.New("chaos: invariant violations")

// ErrNotCovered is returned (wrapped) by Result.Err when every invariant
// held but a coverage counter stayed at zero: the run proves too little.
var ErrNotCovered = errors.New("chaos: coverage incomplete")

// ErrOtherClustersBelowFloor is returned (wrapped) by Result.Err when
// every invariant held and coverage is complete, but during a store
// failover the actors on the store's other clusters got final answers
// to fewer than report.OtherClustersFloor of their calls: one home
// region's store failover disturbed the others.
var ErrOtherClustersBelowFloor = errors.New("chaos: other store clusters' availability below its floor")

// Options tune a run. The zero value is valid.
type Options struct {
	// Duration overrides the scenario's main-phase length.
	Duration time.Duration
	// Progress, if set, is called about once a second during the run.
	Progress func(Progress)
	// Validate is passed to the checker (LedgerBody is always set).
	Validate validate.Options
	// Logger receives the stages' progress; never a key or a body.
	// Default: discard.
	Logger *slog.Logger
	// Client is how the traffic reaches the cluster: ClientDirect (""),
	// ClientSDK or ClientEntry.
	Client string
}

// Progress is a live view of a run, for a progress line.
type Progress struct {
	Elapsed time.Duration
	traffic.Progress
	// Fault describes the fault in force, "" if none.
	Fault string
}

// Result is a finished run.
type Result struct {
	Scenario scenario.Scenario
	Seed     uint64
	Schedule failpoint.Schedule
	History  history.History
	Verdict  validate.Result
	Report   report.Report
	// StageErrors are errors of the stages that did not stop the run (a
	// fault that could not be healed, a probe that could not ask).
	StageErrors []error
}

// Err returns nil for a green run, ErrViolations when an invariant broke,
// else ErrNotCovered naming the zero counters.
func (r Result) Err() error {
	switch {
	case !r.Verdict.Safe():
		return fmt.Errorf("%w: %d (seed %d)", ErrViolations, len(r.Verdict.Violations), r.Seed)
	case !r.Verdict.Green():
		return fmt.Errorf("%w: %v (seed %d)", ErrNotCovered, r.Verdict.Coverage.Missing(), r.Seed)
	case !r.Report.OtherClustersMet():
		return fmt.Errorf("%w: %s (seed %d)", ErrOtherClustersBelowFloor, r.Report.OtherClusters, r.Seed)
	}
	return nil
}

// Run drills sc with seed against c, which the caller started (with
// sc.Policy and sc.Lease) and stops: traffic, faults and probes together
// for the main phase, then healing and the settle phase, then the check
// and the report. The error is for a run that could not be carried out
// (bad scenario, unreachable store); a run that found violations returns a
// Result whose Err says so.
func Run(ctx context.Context, sc scenario.Scenario, seed uint64, c cluster.Cluster, opts Options) (Result, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := sc.Duration
	if opts.Duration > 0 {
		d = opts.Duration
	}
	res := Result{Scenario: sc, Seed: seed}
	sched, err := failpoint.Plan(sc.FaultSpec(d), seed)
	if err != nil {
		return res, err
	}
	res.Schedule = sched
	if err := CheckClientMode(opts.Client); err != nil {
		return res, err
	}
	rec := history.NewRecorder()
	tgt, stopClients, err := clientTarget(ctx, c, opts.Client)
	if err != nil {
		return res, err
	}
	defer stopClients()
	tr, err := traffic.New(sc.Profile(d), tgt, seed, rec)
	if err != nil {
		return res, err
	}
	pr, err := newProber(ctx, c, rec, seed)
	if err != nil {
		return res, err
	}
	defer pr.close()

	log.Info("drill: main phase", "scenario", sc.Name, "seed", seed, "duration", d, "faults", len(sched.Faults))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		current string
		errs    []error
	)
	keep := func(err error) {
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	}
	mainCtx, stopMain := context.WithCancel(ctx)
	obs := failpoint.Observer{
		Started: func(f failpoint.Fault) { mu.Lock(); current = f.String(); mu.Unlock() },
		Healed:  func(failpoint.Fault) { mu.Lock(); current = ""; mu.Unlock() },
	}
	prov := provoker{c: c, rec: rec, seed: seed, path: drillPath, store: pr.store, actors: tr.Actors()}
	wg.Add(4)
	go func() { defer wg.Done(); keep(failpoint.Run(mainCtx, sched, cluster.Injector(c), rec, nil, obs)) }()
	go func() { defer wg.Done(); pr.loop(mainCtx, sc.ProbeInterval, keep) }()
	at, dwell := provokeAt(sched, d)
	go func() { defer wg.Done(); keep(prov.run(ctx, mainCtx, at, dwell)) }()
	go func() {
		defer wg.Done()
		progress(mainCtx, opts.Progress, func() Progress {
			mu.Lock()
			defer mu.Unlock()
			return Progress{Elapsed: time.Duration(rec.Now()), Progress: tr.Progress(), Fault: current}
		})
	}()
	trafficErr := tr.Run(ctx)
	// The faults' schedule fits inside the main phase; once the traffic is
	// done, wait for the last heal, then stop the probes and the progress.
	waitFaults(ctx, sched, rec)
	stopMain()
	wg.Wait()
	if trafficErr != nil {
		return res, trafficErr
	}
	log.Info("drill: settle phase")
	if err := tr.Settle(ctx); err != nil {
		return res, err
	}
	pr.once(ctx, keep) // a final probe after healing
	log.Info("drill: replaying acknowledged answers")
	if err := tr.ReplayAcked(ctx); err != nil {
		return res, err
	}
	recordStoreFailovers(c, rec)
	res.History = rec.History()
	res.StageErrors = errs
	verdict, err := Recheck(ctx, res.History, c, opts.Validate)
	if err != nil {
		return res, err
	}
	res.Verdict = verdict
	in := report.Input{Scenario: sc.Name, Seed: seed, History: res.History, Result: verdict, Client: opts.Client}
	if hm, ok := c.(cluster.Homes); ok {
		in.Home = hm.Home
	}
	res.Report = report.Build(in)
	res.Report.Ledgers = windowLedgers(ctx, pr.store, res.History, rec.Start())
	log.Info("drill: checked", "violations", len(verdict.Violations), "green", verdict.Green())
	return res, nil
}

// recordStoreFailovers adds the replicated store's failovers the faults
// caused (cluster.StoreFailovers) to the history as ProbeStoreFailover
// records, their wall times turned into the recorder's offsets.
func recordStoreFailovers(c cluster.Cluster, rec *history.Recorder) {
	sf, ok := c.(cluster.StoreFailovers)
	if !ok {
		return
	}
	at := func(t time.Time) int64 { return int64(t.Sub(rec.Start())) }
	for _, f := range sf.StoreFailovers() {
		op := history.Operation{Kind: history.KindProbe, Probe: history.ProbeStoreFailover, Fault: f.Fault,
			Call: at(f.Death), SentTo: f.Old, ServedBy: f.New, Shard: -1,
			Detail: fmt.Sprintf("old timeline %d, new timeline %d, rejoined %v", f.OldTimeline, f.NewTimeline, f.Rejoined)}
		if f.Cluster != "" {
			op.Detail += ", cluster " + f.Cluster
		}
		if !f.FirstCommit.IsZero() {
			op.Return = at(f.FirstCommit)
		}
		rec.Add(op)
	}
}

// waitFaults returns once the schedule's last fault should have healed.
func waitFaults(ctx context.Context, sched failpoint.Schedule, rec *history.Recorder) {
	if n := len(sched.Faults); n > 0 {
		end := sched.Faults[n-1].End() + time.Second
		if left := end - time.Duration(rec.Now()); left > 0 {
			t := time.NewTimer(left)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
			}
		}
	}
}

// drillPath is the endpoint the traffic and the drill's own requests use:
// the demo payments endpoint every drill cluster serves.
const drillPath = "/v1/payments"

// target is the traffic's view of the cluster.
func target(c cluster.Cluster) traffic.Target {
	var regions []traffic.Region
	for _, r := range c.Regions() {
		regions = append(regions, traffic.Region{Name: r.Name, URL: r.URL})
	}
	t := traffic.Target{Regions: regions, Token: c.Token, Tenant: c.Tenant(), Path: drillPath}
	if s, ok := c.(cluster.Shards); ok {
		t.Shards = s.Shards()
	}
	if u, ok := c.(cluster.Upstream); ok {
		t.UpstreamTimeout = u.UpstreamTimeout()
	}
	return t
}

// progress calls fn's view every second until ctx ends.
func progress(ctx context.Context, report func(Progress), view func() Progress) {
	if report == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			report(view())
		}
	}
}
