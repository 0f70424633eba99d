// Package drillcmd is `idemctl drill`: chaos drills against a throwaway
// cluster. It links the drill harness (toxiproxy, the cluster rigs, the
// demo services), so only the drill build of idemctl (-tags drill) has
// it; the production build execs that build when asked
// (internal/tagbuild).
package drillcmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/report"
	"github.com/idemcoord/idemcoord/chaos/scenario"
	"github.com/idemcoord/idemcoord/internal/buildinfo"
)

// Values of `idemctl drill run --cluster`.
const (
	// drillProcess is the process-level cluster (the default): an idemd
	// process per region, built with -tags drill, every fault family.
	drillProcess = "process"
	// drillInProcess is the in-process multi-region dev cluster: no build
	// needed, but no pauses, etcd or peer link cuts, crash points or skew.
	drillInProcess = "inprocess"
)

// drillStarter returns the Starter --cluster names.
func drillStarter(kind, source, binary, dir string, progress io.Writer) (cluster.Starter, error) {
	switch kind {
	case drillProcess:
		return cluster.ProcessStarter(cluster.ProcessConfig{Source: source, Binary: binary, Dir: dir, Progress: progress}), nil
	case drillInProcess:
		if source != "" || binary != "" || dir != "" {
			return nil, fmt.Errorf("--source, --idemd and --keep-dir are for --cluster %s", drillProcess)
		}
		return cluster.StartRegional, nil
	}
	return nil, fmt.Errorf("--cluster must be %s or %s, got %q", drillProcess, drillInProcess, kind)
}

// drillSummary is `idemctl drill run --output json`: the figures of a run.
type drillSummary struct {
	Scenario          string  `json:"scenario"`
	Seed              uint64  `json:"seed"`
	Safe              bool    `json:"safe"`
	Green             bool    `json:"green"`
	Requests          int     `json:"requests"`
	Acked             int     `json:"acked"`
	Duplicates        int     `json:"duplicates"`
	Mismatches        int     `json:"mismatches"`
	StaleRejected     int     `json:"stale_epoch_rejected"`
	Takeovers         int     `json:"takeovers"`
	Retries40001      int     `json:"retries_40001"`
	AmbiguousResolved int     `json:"ambiguous_resolved"`
	MovesUnderLoad    int     `json:"moves_under_load"`
	FailoverP50       string  `json:"failover_p50"`
	FailoverP99       string  `json:"failover_p99"`
	Availability      float64 `json:"availability"`
	// Client is the client mode the traffic ran in.
	Client string `json:"client"`
	// AvailabilityUnaffected and AvailabilityAffected are the shares of
	// client calls answered (a success or a final 4xx) inside region-loss windows, for actors
	// the lost region did not own and for those it owned; null when no
	// such call returned inside a window.
	AvailabilityUnaffected *float64 `json:"availability_unaffected"`
	AvailabilityAffected   *float64 `json:"availability_affected"`
	// InFlightResolvedP50 and P99 are the times from a region loss to the
	// final answer of the intents the lost region had in flight.
	InFlightResolvedP50 string `json:"in_flight_resolved_p50"`
	InFlightResolvedP99 string `json:"in_flight_resolved_p99"`
	// RegionFailovers counts the region failovers the controllers made;
	// FalseFailovers those of a region no fault of the drill took out
	// (killed, paused past its lease, cut from etcd or SQL, crashed).
	RegionFailovers int `json:"region_failovers"`
	FalseFailovers  int `json:"false_failovers"`
	// AckReplayed counts the acknowledged answers re-sent after the drill;
	// AckedLost those whose retry did not get the acknowledged answer.
	AckReplayed int `json:"acked_replayed"`
	AckedLost   int `json:"acked_lost"`
	// StoreFailoverP50 and P99 are, in seconds, the replicated store's
	// failovers from the primary's death to the first write committed on
	// its successor (null on a single PostgreSQL or without a failover);
	// StoreFailovers counts them, StoreFailoversUnmeasured those with no
	// write seen on a successor.
	StoreFailoverP50         *float64 `json:"store_failover_p50"`
	StoreFailoverP99         *float64 `json:"store_failover_p99"`
	StoreFailovers           int      `json:"store_failovers"`
	StoreFailoversUnmeasured int      `json:"store_failovers_unmeasured"`
	// ZombiePrimaries counts the store primaries paused past their ttl,
	// ZombiesRejoined those that rejoined on their successor's timeline.
	ZombiePrimaries int `json:"zombie_primaries"`
	ZombiesRejoined int `json:"zombies_rejoined"`
	// OtherClusterAvailability is the share of client calls with a final
	// answer, during the store failovers, of the actors whose shards live
	// on the store's other clusters (null without such a call);
	// OtherClusterCalls counts those calls; OtherClusterFloorMet is false
	// when the share was below the floor (report.OtherClustersFloor, 0.999),
	// which makes the run not green.
	OtherClusterAvailability *float64 `json:"other_cluster_availability"`
	OtherClusterCalls        int      `json:"other_cluster_calls"`
	OtherClusterFloorMet     bool     `json:"other_cluster_floor_met"`
	Missing                  []string `json:"missing_coverage,omitempty"`
	Violations               []string `json:"violations,omitempty"`
	Error                    string   `json:"error,omitempty"`
}

// Output is what the drill command needs of idemctl's --output handling.
type Output struct {
	// AddFlag registers --output on a command.
	AddFlag func(cmd *cobra.Command, format *string)
	// Check rejects an unknown --output value.
	Check func(format string) error
	// JSON is the --output value of JSON.
	JSON string
	// Render writes v (JSON-encodable) in format.
	Render func(w io.Writer, format string, v any) error
}

// runOptions are the flags of `idemctl drill run`, read by its run, and
// the output handling it was given.
type runOptions struct {
	name, reportPath, historyPath, format string
	unsafe, kind, source, binary, mode    string
	keepDir                               string
	seed                                  uint64
	duration                              time.Duration
	output                                Output
}

// Command returns `idemctl drill`, its output through o.
func Command(o Output) *cobra.Command {
	drill := &cobra.Command{Use: "drill", Short: "Run chaos drills against a throwaway cluster"}
	opts := runOptions{output: o}
	run := &cobra.Command{
		Use:   "run --scenario NAME --seed N",
		Short: "Run one seeded drill and check every invariant",
		Long: `run starts a throwaway three-region cluster, drives seeded traffic against
it while the scenario's faults (region kills and pauses, link cuts, etcd
leader kills, crash points, clock skew, moves under load...) are injected,
heals, then checks the invariants
(at most one upstream effect per key, replays identical, fencing, ...) and
the coverage (a stale-epoch write rejected, a takeover, a 40001 retry, an
ambiguous outcome resolved, a move under load). The drill provokes each of
them itself before the first fault, so every seed can be green.

--cluster process (the default) runs each region as its own idemd process,
built with -tags drill from the idemcoord module source (found at or above
the working directory, or --source DIR; --idemd BIN uses a drill build
already made), with a 3-member etcd, a throwaway PostgreSQL, the demo bank
and payments servers in this process, and every link (to each etcd member,
to SQL, to each other region, to its upstream) through its own toxiproxy.
--cluster inprocess runs the regions in this process instead: nothing to
build, but pauses, etcd and peer link cuts, crash points and clock skew are
unsupported there (a scenario using them is checked safe, not green).

The same --seed replays the same faults and workload. The exit status is
non-zero when an invariant broke (the summary prints the seed, each broken
invariant and its shortest excerpt) or when coverage is incomplete.

Scenarios: ` + strings.Join(scenario.Names(), ", ") + `.

Fault kinds a scenario draws from (its faults.kinds), with how the report
classes each (a region loss: failover measured, a failover of its region
explained; must not fail over: a failover in its window is a false one):
` + failpoint.Usage(),
		Example: `  idemctl drill run --scenario region-loss-transfer --seed 7 --duration 30s
  idemctl drill run --scenario mixed --seed 42 --duration 10m --report drill.html`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd)
		},
	}
	run.Flags().StringVar(&opts.name, "scenario", "", "scenario to run (required): "+strings.Join(scenario.Names(), ", "))
	run.Flags().Uint64Var(&opts.seed, "seed", 1, "seed of the faults and the workload (the same seed replays the same drill)")
	run.Flags().DurationVar(&opts.duration, "duration", 0, "length of the main phase (default: the scenario's)")
	run.Flags().StringVar(&opts.reportPath, "report", "", "write the HTML report to `FILE`")
	run.Flags().StringVar(&opts.historyPath, "history", "", "write the history as JSON lines to `FILE` (for a recheck)")
	run.Flags().StringVar(&opts.unsafe, "unsafe-drill-mode", "", "break the coordinator on purpose so the checker must report violations, one of "+
		strings.Join(append(cluster.UnsafeModes(), cluster.UnsafeAsyncReplication), ", ")+" (docs/drills.md says what each breaks); drills only")
	run.Flags().StringVar(&opts.kind, "cluster", drillProcess, "cluster to drill: "+drillProcess+" (an idemd process per region) or "+
		drillInProcess+" (regions in this process; fewer fault families)")
	run.Flags().StringVar(&opts.source, "source", "", "idemcoord module `DIR` to build the drill idemd from (default: found at or above the working directory)")
	run.Flags().StringVar(&opts.binary, "idemd", "", "an idemd `BIN` built with -tags drill, instead of building one")
	run.Flags().StringVar(&opts.keepDir, "keep-dir", "", "keep the regions' configurations and logs (<region>.yaml, <region>.log) in `DIR` (--cluster process); default: a temporary directory, removed")
	run.Flags().StringVar(&opts.mode, "client", chaos.ClientDirect, "how the drill's clients reach the cluster: "+chaos.ClientDirect+
		" (each attempt to one region's address, the baseline), "+chaos.ClientSDK+" (the multi-region Go SDK with every region) or "+
		chaos.ClientEntry+" (through the HAProxy global entry; needs haproxy)")
	run.MarkFlagRequired("scenario")
	opts.output.AddFlag(run, &opts.format)
	drill.AddCommand(run)
	return drill
}

// summarize turns a report into the JSON summary.
func summarize(name string, seed uint64, mode string, r report.Report, err error) drillSummary {
	s := drillSummary{Scenario: name, Seed: seed, Safe: r.Safe, Green: r.Green, Requests: r.Requests, Acked: r.Acked,
		Duplicates: r.Duplicates, Mismatches: r.Mismatches, StaleRejected: r.Coverage.StaleEpochRejected,
		Takeovers: r.Coverage.Takeovers, Retries40001: r.Coverage.Retries40001,
		AmbiguousResolved: r.Coverage.AmbiguousResolved, MovesUnderLoad: r.Coverage.MovesUnderLoad,
		FailoverP50: r.Failover.P50.String(), FailoverP99: r.Failover.P99.String(), Missing: r.Missing}
	if r.Requests > 0 {
		s.Availability = float64(r.Acked) / float64(r.Requests)
	}
	s.Client = mode
	if v, ok := r.Unaffected.Share(); ok {
		s.AvailabilityUnaffected = &v
	}
	if v, ok := r.Affected.Share(); ok {
		s.AvailabilityAffected = &v
	}
	s.InFlightResolvedP50, s.InFlightResolvedP99 = r.InFlight.P50.String(), r.InFlight.P99.String()
	s.RegionFailovers, s.FalseFailovers = r.RegionFailovers, len(r.FalseFailovers)
	s.AckReplayed, s.AckedLost = r.AckReplayed, r.AckedLost
	if r.StoreFailover.N > 0 {
		p50, p99 := r.StoreFailover.P50.Seconds(), r.StoreFailover.P99.Seconds()
		s.StoreFailoverP50, s.StoreFailoverP99 = &p50, &p99
	}
	s.StoreFailovers, s.StoreFailoversUnmeasured = r.StoreFailover.N+r.StoreFailoversUnmeasured, r.StoreFailoversUnmeasured
	s.ZombiePrimaries, s.ZombiesRejoined = r.Zombies, r.ZombiesRejoined
	if v, ok := r.OtherClusters.Share(); ok {
		s.OtherClusterAvailability = &v
	}
	s.OtherClusterCalls, s.OtherClusterFloorMet = r.OtherClusters.Calls, r.OtherClustersMet()
	for _, row := range r.Table {
		for _, v := range row.Violations {
			s.Violations = append(s.Violations, fmt.Sprintf("%s: %s", row.Invariant, v.Message))
		}
	}
	if err != nil {
		s.Error = err.Error()
	}
	return s
}

// isTerminal reports whether w is a terminal, for a live progress line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && chaos.IsTerminal(f)
}

// checkWritable fails, naming flag, when path (if set) cannot be created
// or written. It leaves no file behind that was not there.
func checkWritable(flag, path string) error {
	if path == "" {
		return nil
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s %s: cannot be written: %w", flag, path, err)
	}
	f.Close()
	if os.IsNotExist(statErr) {
		os.Remove(path)
	}
	return nil
}

// run is `idemctl drill run`'s work, its flags read into opts.
func (opts *runOptions) run(cmd *cobra.Command) error {
	if err := opts.output.Check(opts.format); err != nil {
		return err
	}
	if _, err := scenario.Load(opts.name); err != nil {
		return err
	}
	if err := chaos.CheckClientMode(opts.mode); err != nil {
		return fmt.Errorf("--client: %w", err)
	}
	// The build's progress goes to stderr, with the line below.
	start, err := drillStarter(opts.kind, opts.source, opts.binary, opts.keepDir, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	// The outputs are checked before a run that may take minutes:
	// a report that cannot be written must not be found out at
	// the end of a green run.
	if err := errors.Join(checkWritable("--report", opts.reportPath), checkWritable("--history", opts.historyPath)); err != nil {
		return err
	}
	if opts.kind == drillProcess && opts.binary == "" {
		fmt.Fprintln(cmd.ErrOrStderr(), "building idemd with -tags drill (about 2 minutes on a cold build cache; --idemd BIN reuses a build)...")
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// With --output json the progress and the text summary go to
	// stderr; stdout holds only the JSON.
	out, term := cmd.OutOrStdout(), isTerminal(cmd.OutOrStdout())
	if opts.format == opts.output.JSON {
		out, term = cmd.ErrOrStderr(), false
	}
	res, err := chaos.Drill(ctx, chaos.DrillConfig{Scenario: opts.name, Seed: opts.seed, Duration: opts.duration,
		ReportPath: opts.reportPath, HistoryPath: opts.historyPath, Start: start, Out: out, Terminal: term,
		Unsafe: opts.unsafe, Client: opts.mode, Command: opts.replayCommand(), Commit: sourceCommit(opts.source),
		Cluster: opts.kind})
	if opts.format == opts.output.JSON {
		if rerr := opts.output.Render(cmd.OutOrStdout(), opts.format, summarize(opts.name, opts.seed, opts.mode, res.Report, err)); rerr != nil {
			return errors.Join(err, rerr)
		}
	}
	if err != nil {
		return fmt.Errorf("drill %s seed %d: %w", opts.name, opts.seed, err)
	}
	return nil
}

// replayCommand is the command that replays this run, for the report's
// header: `idemctl drill run` with the flags that decide the run (not the
// output files), whatever binary or build cache path ran it.
func (opts *runOptions) replayCommand() string {
	args := []string{"idemctl", "drill", "run", "--scenario", opts.name, "--seed", strconv.FormatUint(opts.seed, 10)}
	if opts.duration > 0 {
		args = append(args, "--duration", opts.duration.String())
	}
	if opts.kind != drillProcess {
		args = append(args, "--cluster", opts.kind)
	}
	if opts.mode != "" && opts.mode != chaos.ClientDirect {
		args = append(args, "--client", opts.mode)
	}
	if opts.unsafe != "" {
		args = append(args, "--unsafe-drill-mode", opts.unsafe)
	}
	return strings.Join(args, " ")
}

// sourceCommit is the commit of the source drilled: this build's, else
// (under go run, which records none) the git checkout's at dir or the
// working directory, with "+modified" for uncommitted changes; "" when
// neither says.
func sourceCommit(dir string) string {
	if info := buildinfo.Read(); info.Commit != "" {
		if info.Modified {
			return info.Commit + "+modified"
		}
		return info.Commit
	}
	if dir == "" {
		dir = "."
	}
	out, err := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	commit := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		commit += "+modified"
	}
	return commit
}
