// Package chaos runs drills: a pipeline of separate stages, after etcd's
// tests/robustness. Traffic (chaos/traffic) and faults (chaos/failpoint)
// run together against a cluster (chaos/cluster) while drill-side probes
// (chaos/probe) poke the store; everything is recorded in a history
// (chaos/history); after healing, the checker (chaos/validate) judges the
// history, the final SQL state and the bank's ledger, and the report
// (chaos/report) shows it. Scenarios are YAML (chaos/scenario).
//
// Run is what `idemctl drill run` calls; Recheck judges a saved history
// again against a store.
package chaos
