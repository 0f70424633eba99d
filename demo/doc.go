// Package demo holds the demo upstream that the local dev cluster and the
// chaos drills run behind the idemcoord gateway: a payments API
// (demo/payments) and the downstream bank ledger it charges (demo/bank).
//
// Both are plain net/http handlers over PostgreSQL (or CockroachDB) through
// a *pgxpool.Pool the caller owns, with their own Migrate functions. The bank
// keeps every charge, duplicates included, so a drill can count how many
// times an operation really had an effect.
package demo
