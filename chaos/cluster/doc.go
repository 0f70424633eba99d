// Package cluster says what a drill needs from a three-region cluster, as
// small interfaces a cluster implements as far as it can: its topology
// (region URLs, tokens, the store's DSN) and, separately, each family of
// faults (processes, links, etcd members, crash points, clocks). Injector
// turns whatever a cluster supports into a failpoint.Injector; a fault
// whose family the cluster lacks is reported as failpoint.ErrUnsupported,
// never silently skipped.
//
// The process-level cluster (each region its own idemd and payments
// process, a 3-member etcd, toxiproxy on every link) implements all of
// them; Dev wraps the in-process devcluster, which supports no fault yet,
// to prove the pipeline end to end on a no-fault scenario.
package cluster
