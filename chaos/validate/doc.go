// Package validate is the drill's checker. It works only from what the
// drill recorded (package chaos/history), the final state of the SQL store
// (idempotency_records, shard_fences, repair_audit), the business ledger
// (the demo's payments and bank_charges tables) and, optionally, a plain
// snapshot of the etcd ownership directory. It never reads the
// coordinator's own counters: a coordinator that lies about itself must
// still be caught.
//
// Check evaluates the invariants of DESIGN.md (I1-I7 and liveness after
// healing), fits every key's history to a write-once register with
// porcupine (an unknown outcome "may have happened"), and counts coverage:
// a run is green only if every invariant held and every coverage counter
// is above zero.
package validate
