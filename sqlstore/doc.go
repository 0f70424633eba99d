// Package sqlstore is idemcoord's SQL store: the records that arbitrate every
// idempotency key, the fence table that refuses writes from a region that
// lost its shard, TTL cleanup, purge and the repair audit.
//
// The production target is CockroachDB; tests run on PostgreSQL 15 at
// SERIALIZABLE. The SQL in this package is the portable subset both accept.
// CockroachDB-only DDL (regions, REGIONAL BY ROW, zone configs) is
// generated from the region topology by package sqlstore/multiregion and
// applied by hand (idemctl deploy cockroach-sql).
//
// Every shard has an owner region once BootstrapFences has run; a shard
// without one admits nobody. MoveFence changes a shard's owner under a new
// epoch, audited.
//
// Every write is a short serializable transaction that also locks its
// shard's fence row (SELECT ... FOR SHARE) and compares epochs, and every
// update is conditioned on the record's version: zero rows affected is
// ErrLostOwnership, never success. Transactions are retried whole on 40001
// and 40P01 by the one retry loop of internal/retry, within one budget per
// call (retry.Default.Store: attempts and total time) that every loop of
// the call shares; a connection lost while a commit may have happened
// surfaces as *AmbiguousCommitError, which the claim path resolves by
// re-running the idempotent claim and an update by reading the record.
//
// Giving up is typed, so callers tell a busy key from a dead store:
// *store.RetriesExhaustedError (errors.Is store.ErrContention) when the
// call's budget ran out, *store.UnavailableError (store.ErrUnavailable)
// when the store could not be reached, and *store.AmbiguousCommitError
// (which also matches store.ErrUnavailable) when a commit's outcome stayed
// unknown.
//
// Store implements store.Backend, the contract of package store, in that
// package's types and errors (this package defines none of its own);
// TestStore runs the contract's conformance suite, store/storetest, on
// PostgreSQL.
package sqlstore
