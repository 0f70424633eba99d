// Package store is the contract between idemcoord's coordinator and the
// database that arbitrates idempotency keys: the records, claims, leases,
// results and typed errors, in product terms, and one small interface per
// capability (Claims, Queue, Cancels, Fences, Auditor, Maintenance, Admin).
// Store is what the gateway requires; Backend is what a daemon opens.
//
// A backend is correct when package store/storetest passes against it on
// a real database. What every backend must guarantee, whatever its
// engine (docs/store.md):
//
//   - One winner per key: concurrent claims of one key decide exactly one
//     FirstRun (serializable arbitration or a conditional write).
//   - Every write through a Lease is conditioned on the lease's version and
//     advances it; zero rows affected is ErrLostOwnership, never success.
//   - Every write checks the shard's fence (epoch and owner region) in the
//     same transaction as the change; a stale token is refused with
//     *fencing.StaleEpochError and changes nothing.
//   - Lease expiry and TTLs are judged by one clock every instance shares
//     (the database's, or an injected one in tests).
//   - Giving up is typed: *RetriesExhaustedError (ErrContention) when
//     other writers kept winning, *UnavailableError (ErrUnavailable) when
//     the database could not be reached, *AmbiguousCommitError (also
//     ErrUnavailable) when a commit's outcome is unknown.
//
// Package sqlstore is the SQL backend (CockroachDB in production,
// PostgreSQL in tests).
package store
