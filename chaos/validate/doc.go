// Package validate is the drill's checker. It works only from what the
// drill recorded (package chaos/history), the final state of the SQL store
// (idempotency_records, shard_fences, repair_audit), the business ledger
// (the demo's payments and bank_charges tables) and, optionally, a plain
// snapshot of the etcd ownership directory and of its revision history.
// It never reads the coordinator's own counters: a coordinator that lies
// about itself must still be caught.
//
// Check evaluates the invariants of docs/architecture.md ("Invariants",
// I1-I8, and liveness after healing), fits every key's history to a
// write-once register with porcupine (an unknown outcome "may have
// happened"), and counts coverage: a run is green only if every invariant
// held and every coverage counter is above zero.
//
// # I8: ownership changes are compare-and-swaps
//
// I8, "no ownership decision is taken from a watch event alone", is about
// how a decision was made, which no store records. What the stores do
// record is every ownership change that took effect, and a change decided
// from a watch event (a hint: late, possibly superseded) and written
// without a compare-and-swap leaves marks a compare-and-swap never does.
// The checker therefore checks the observable form of I8: every ownership
// transition that took effect was a compare-and-swap on the state it
// replaced, in both stores, and the two stores tell the same story.
//
// Checked, per shard of shard_fences:
//
//   - SQL chain: the audited fence moves (repair_audit "move_fence") go
//     from epoch 1, the bootstrap epoch, to 2, 3, ... with no gap (a move
//     from an epoch the fence never held: a mover acting on a stale view)
//     and no repeat (two moves from one epoch: two movers acting on one
//     event), and the fence's final epoch is 1 + the number of moves (no
//     unaudited move).
//   - etcd chain, when the cluster serves the directory's revision history
//     (Options.DirectoryHistory): the first revision is the bootstrap's
//     (epoch 1, not FENCING) when etcd still holds it; every FENCING
//     revision at epoch e+1 replaced a serving entry at epoch e and names
//     it exactly as its transfer's from-owner, from-epoch and from-state
//     (a blind put from a stale view names what the mover believed, not
//     what it replaced); every ACTIVE or FAILED_OVER revision replaced the
//     FENCING of the same epoch and owner and ends in the state that
//     transfer announced (ownership never changes without a fenced
//     transfer).
//   - both stores: every audited SQL move from e to region R has exactly
//     one etcd transfer to epoch e+1 owned by R, and every etcd transfer
//     but a trailing one still in flight has exactly one audited move.
//
// The final agreement of etcd and SQL after healing, and a shard left
// FENCING, are I4's (Options.Directory).
//
// What it cannot see: a decision taken from a watch event that was still
// current, and written with a compare-and-swap, is indistinguishable from
// one taken on a linearizable read (and as safe); decisions that never
// took effect (a compare-and-swap that lost, a move refused by the fence);
// the real-time order of an etcd revision and a SQL move (etcd revisions
// carry no time, so the order is checked by epochs only); revisions etcd
// compacted away (ShardHistory.Complete false: the etcd chain is checked
// from the first revision held, and SQL moves to older epochs are not
// matched); moves whose audit rows were deleted (the checker assumes
// repair_audit keeps every move, and reports a hole as a gap); controller
// elections and liveness keys; and admission: a gateway that accepts a write because its watch-fed cache says it owns
// the shard is caught by the SQL fence (I3) and by the overlap check (I6),
// not here.
package validate
