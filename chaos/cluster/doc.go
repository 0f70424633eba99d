// Package cluster says what a drill needs from a three-region cluster, as
// small interfaces a cluster implements as far as it can: its topology
// (region URLs, tokens, the store's DSN) and, separately, each family of
// faults (processes, links, etcd members, crash points, clocks). Injector
// turns whatever a cluster supports into a failpoint.Injector; a fault
// whose family the cluster lacks is reported as failpoint.ErrUnsupported,
// never silently skipped.
//
// Dev wraps the in-process devcluster with one fault family, the shared
// upstream link, to prove the pipeline end to end.
//
// Regional (StartRegional) is the in-process multi-region devcluster with
// the families it can support: region loss (Processes.Kill stops a region
// without a drain while its upstream calls hang, Restart brings it back
// and fails its home shards back with a fenced, drained move), per-region
// SQL links through toxiproxy, per-region upstream links, etcd leader
// kills, Homes and Directory. Its pauses, etcd and peer links, crash
// points and clocks are ErrUnsupported. Options.Unsafe
// UnsafeRegionLocalClaims breaks its coordinator on purpose (drills only).
//
// # The process-level cluster (to be built on these interfaces)
//
// Topology: per region an `idemd run` process and a demo payments process
// (each its own exec.Cmd, so SIGKILL/SIGSTOP/SIGCONT hit one region only);
// a 3-member etcd, one member per region, each separately killable; one
// PostgreSQL; the bank. Every link goes through its own toxiproxy proxy, in
// the drill's process (toxiproxy v2 in-process, see FACTS.md), named
// "<region>-<link>":
//
//	<region>-etcd      idemd -> its etcd member     (Links, failpoint.LinkEtcd)
//	<region>-sql       idemd -> PostgreSQL          (failpoint.LinkSQL)
//	<region>-peer      idemd -> other regions' idemd (failpoint.LinkPeer)
//	<region>-upstream  idemd -> its payments        (failpoint.LinkUpstream)
//
// Cut is a "timeout" toxic with timeout 0 (blackhole) on both directions;
// Slow is "latency" with jitter; Reset is "reset_peer" (which hits
// connections mid-COMMIT on the sql link); Restore removes the link's
// toxics. Processes keep each region's listen address across Restart, so
// clients and peers reconnect to the same URL. Etcd.Leader asks each
// member's Status and returns the one whose Leader is itself. CrashPoints
// and Clocks talk to a drills-only admin endpoint of idemd (compiled in
// with a build tag), which the coordinator's crash points and injected
// clock read. Shards and Homes report the bootstrap shard count and the
// topology's home function, so traffic hashes like the gateway and the
// checker knows the epoch-1 owners. Directory snapshots the etcd
// directory (shard -> owner, epoch, state) after healing for I4.
package cluster
