// Package chaos runs drills: a pipeline of separate stages, after etcd's
// tests/robustness. Traffic (chaos/traffic) and faults (chaos/failpoint)
// run together against a cluster (chaos/cluster) while drill-side probes
// (chaos/probe) poke the store; everything is recorded in a history
// (chaos/history); after healing, the checker (chaos/validate) judges the
// history, the final SQL state and the bank's ledger, and the report
// (chaos/report) shows it. Scenarios are YAML (chaos/scenario).
//
// Drill is what `idemctl drill run` calls:
//
//	res, err := chaos.Drill(ctx, chaos.DrillConfig{
//		Scenario: "mixed", Seed: 42, Duration: 10 * time.Minute,
//		ReportPath: "drill.html", HistoryPath: "drill.jsonl",
//		Start: cluster.StartProcesses, // an idemd process per region (or StartRegional)
//		Out: os.Stdout, Terminal: chaos.IsTerminal(os.Stdout),
//	})
//	// err is non-nil (errors.Is ErrViolations or ErrNotCovered) unless green.
//
// Recheck judges a saved history again, against a live cluster or a bare
// database URL (DSN).
package chaos
