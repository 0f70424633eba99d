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
// # The process-level cluster
//
// Process (StartProcesses, ProcessStarter) implements every interface:
// per region an `idemd run` process built with -tags drill (DrillIdemd:
// internal/tagbuild's cached drill build of the module source FindSource
// finds, checked once per process) with its own control API (CrashPoints, Clocks), so SIGKILL,
// SIGSTOP and SIGCONT hit one region only; a 3-member etcd, one member per
// region, each separately killable (in the drill's process); one
// PostgreSQL; the bank and a demo payments server per region (in the
// drill's process). Every link goes through its own toxiproxy proxy, in
// the drill's process:
//
//	<region>-etcd-<member>   idemd -> each etcd member (Links, failpoint.LinkEtcd)
//	<region>-sql             idemd -> PostgreSQL       (failpoint.LinkSQL)
//	<region>-peer-<region>   idemd -> each other region (failpoint.LinkPeer; CutTo one)
//	<region>-upstream        idemd -> its payments     (failpoint.LinkUpstream)
//
// Cut is a "timeout" toxic with timeout 0 (blackhole) on both directions;
// Slow is "latency" with jitter; Reset is "reset_peer" (which hits
// connections mid-COMMIT on the sql link); Restore removes the link's
// toxics. Regions keep their listen addresses across Restart, so clients
// and peers reconnect to the same URL; after a restart, a resume, a
// restored etcd link or a fired crash point the region's home shards are
// failed back to it (fenced, drained). Etcd.Leader asks each member's
// Status. Homes reports the topology's home function and Directory
// snapshots the etcd directory after healing for I4. docs/drills.md has
// the whole picture.
package cluster
