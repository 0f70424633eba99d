// Package report turns a drill's history and the checker's verdict into a
// text summary and a self-contained HTML report (inline SVG, no script and
// no network needed to open it): a timeline of throughput and errors per
// second with the fault windows shaded, latency percentiles, failover
// times, coverage and the invariant table with each violation's excerpt.
// Every figure is computed from the history and the verdict, never from
// the coordinator's metrics.
package report
