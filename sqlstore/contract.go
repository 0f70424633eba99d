package sqlstore

import "github.com/idemcoord/idemcoord/store"

// The store contract's types and errors are package store's; this package
// implements them. The names below let the SQL code read as it always
// has. Callers outside this package use package store's names.
type (
	Outcome                 = store.Outcome
	ClaimRequest            = store.ClaimRequest
	Claim                   = store.Claim
	Lease                   = store.Lease
	Scope                   = store.Scope
	Snapshot                = store.Snapshot
	Result                  = store.Result
	Record                  = store.Record
	Queued                  = store.Queued
	Runnable                = store.Runnable
	Cursor                  = store.Cursor
	StrandedScan            = store.StrandedScan
	AuditFilter             = store.AuditFilter
	AuditRow                = store.AuditRow
	AuditEntry              = store.AuditEntry
	OperationFilter         = store.OperationFilter
	OperationPage           = store.OperationPage
	Stats                   = store.Stats
	FenceRow                = store.FenceRow
	RetriesExhaustedError   = store.RetriesExhaustedError
	UnavailableError        = store.UnavailableError
	AmbiguousCommitError    = store.AmbiguousCommitError
	ShardCountMismatchError = store.ShardCountMismatchError
)

// Claim outcomes (store.Outcome).
const (
	FirstRun   = store.FirstRun
	TakenOver  = store.TakenOver
	Replayed   = store.Replayed
	Mismatch   = store.Mismatch
	InFlight   = store.InFlight
	Unresolved = store.Unresolved
)

// DefaultStatsLimit is store.DefaultStatsLimit.
const DefaultStatsLimit = store.DefaultStatsLimit

// Sentinel errors (package store's).
var (
	ErrLostOwnership      = store.ErrLostOwnership
	ErrNotFound           = store.ErrNotFound
	ErrFingerprintVersion = store.ErrFingerprintVersion
	ErrNotUnknown         = store.ErrNotUnknown
	ErrNotCancellable     = store.ErrNotCancellable
	ErrContention         = store.ErrContention
	ErrUnavailable        = store.ErrUnavailable
	ErrNotBootstrapped    = store.ErrNotBootstrapped
	ErrNoOperator         = store.ErrNoOperator
)

// Store implements every capability of the store contract.
var _ store.Backend = (*Store)(nil)
