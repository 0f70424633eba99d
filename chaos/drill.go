package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/scenario"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// DrillConfig is what `idemctl drill run` passes: the flags, the cluster
// to start and where to write.
type DrillConfig struct {
	// Scenario names a shipped scenario (scenario.Names()).
	Scenario string
	// Seed decides the faults and the workload.
	Seed uint64
	// Duration overrides the scenario's main phase; 0 keeps it.
	Duration time.Duration
	// ReportPath, if set, receives the HTML report.
	ReportPath string
	// HistoryPath, if set, receives the history as JSON lines.
	HistoryPath string
	// Start starts the cluster; it is stopped before Drill returns.
	Start cluster.Starter
	// Unsafe is passed to the cluster (cluster.Options.Unsafe).
	Unsafe string
	// Client is the client mode (Options.Client): ClientDirect (""),
	// ClientSDK or ClientEntry.
	Client string
	// Validate is passed to the checker.
	Validate validate.Options
	// Command, Commit and Cluster go into the report's header
	// (report.Meta): the command that replays the run, the source's
	// commit, the kind of cluster. Empty keeps the defaults.
	Command, Commit, Cluster string
	// Out receives the progress and the text summary.
	Out io.Writer
	// Terminal makes the progress a live line.
	Terminal bool
}

// Drill loads the scenario, starts the cluster, runs the drill, writes the
// summary (and the report and history files) and stops the cluster. The
// error is non-nil when the drill could not run, or when it ran and was
// not green (errors.Is ErrViolations, ErrNotCovered or
// ErrOtherClustersBelowFloor): a command exits
// non-zero on it. The summary printed before holds the seed, each broken
// invariant and its excerpt.
func Drill(ctx context.Context, cfg DrillConfig) (Result, error) {
	sc, err := scenario.Load(cfg.Scenario)
	if err != nil {
		return Result{}, err
	}
	if err := CheckClientMode(cfg.Client); err != nil {
		return Result{}, err
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	c, err := cfg.Start(ctx, cluster.Options{Policy: string(sc.Policy), Lease: sc.Lease, Unsafe: cfg.Unsafe, Store: sc.Store})
	if err != nil {
		return Result{}, fmt.Errorf("chaos: start cluster: %w", err)
	}
	defer c.Stop(context.WithoutCancel(ctx))
	res, err := Run(ctx, sc, cfg.Seed, c, Options{Duration: cfg.Duration, Progress: ProgressPrinter(out, cfg.Terminal),
		Validate: cfg.Validate, Client: cfg.Client})
	if cfg.Terminal {
		fmt.Fprintln(out)
	}
	if err != nil {
		return res, err
	}
	if cfg.Command != "" {
		res.Report.Meta.Command = cfg.Command
	}
	if cfg.Commit != "" {
		res.Report.Meta.Commit = cfg.Commit
	}
	res.Report.Meta.Cluster = cfg.Cluster
	if err := res.Report.WriteText(out); err != nil {
		return res, err
	}
	var files []error
	if cfg.ReportPath != "" {
		var b bytes.Buffer
		if err := res.Report.WriteHTML(&b); err == nil {
			err := os.WriteFile(cfg.ReportPath, b.Bytes(), 0o644)
			if err == nil {
				fmt.Fprintf(out, "report written to %s\n", absPath(cfg.ReportPath))
			}
			files = append(files, err)
		} else {
			files = append(files, err)
		}
	}
	if cfg.HistoryPath != "" {
		var b bytes.Buffer
		if err := history.WriteJSONL(&b, res.History); err == nil {
			err := os.WriteFile(cfg.HistoryPath, b.Bytes(), 0o644)
			if err == nil {
				fmt.Fprintf(out, "history written to %s\n", absPath(cfg.HistoryPath))
			}
			files = append(files, err)
		} else {
			files = append(files, err)
		}
	}
	for _, e := range res.StageErrors {
		fmt.Fprintf(out, "stage error: %v\n", e)
	}
	return res, errors.Join(append(files, res.Err())...)
}

// absPath is path made absolute, for a line that says where a file went;
// path itself when that fails.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
