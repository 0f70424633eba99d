package store

import (
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
)

// Outcome is what a claim decided.
type Outcome int

// Claim outcomes.
const (
	// FirstRun: the key was new; the caller owns the operation and must run it.
	FirstRun Outcome = iota + 1
	// TakenOver: a lease expired or a retryable failure was recorded; the
	// caller owns the operation again and must resume from Lease.LastStage.
	TakenOver
	// Replayed: the operation is COMPLETED, TERMINAL_FAILURE or CANCELLED; answer with
	// Record.Snapshot.
	Replayed
	// Mismatch: the key was used with a different request. Nothing changed.
	Mismatch
	// InFlight: another worker holds a live lease; retry after RetryAfter.
	InFlight
	// Unresolved: the operation is OUTCOME_UNKNOWN and must be resolved
	// (downstream queried by operation id) before anything re-runs it.
	Unresolved
	// WindowPassed: the claim would take the operation over (or resolve
	// its unknown outcome to run it again), but its first claim is older
	// than ClaimRequest.DownstreamWindow on the store's clock. Nothing
	// changed and nothing may be sent: the operation waits for an operator
	// (package downstream).
	WindowPassed
)

var outcomeNames = [...]string{"", "first_run", "takeover", "replay", "fingerprint_conflict", "in_progress",
	"outcome_unknown", "downstream_window_passed"}

// Outcomes lists every outcome, in order.
func Outcomes() []Outcome {
	return []Outcome{FirstRun, TakenOver, Replayed, Mismatch, InFlight, Unresolved, WindowPassed}
}

// String names the outcome as the metrics do.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// ClaimRequest asks for ownership of one key.
type ClaimRequest struct {
	Scope       Scope
	Fingerprint idempotency.Fingerprint
	// Refingerprint computes the request's fingerprint under an older
	// algorithm version, so a record stored before an upgrade still
	// matches its retries. Nil means only Fingerprint.Version is known.
	Refingerprint func(version int) (idempotency.Fingerprint, error)
	// Token is the writer's fencing token.
	Token fencing.Token
	// Worker identifies this instance in lease_owner (for operators).
	Worker string
	// Lease is how long the claim is owned without a heartbeat.
	Lease time.Duration
	// TTL is how long the record lives after its last change, at least. A
	// claim starts it at Lease + TTL, so a finish within the lease need not
	// move it.
	TTL time.Duration
	// ReplayTTL, when set and shorter than TTL, is how long the record
	// keeps its full answer: after it cleanup compacts the record to a
	// dedup marker kept until TTL. Zero keeps the full answer for TTL.
	ReplayTTL time.Duration
	// Pending starts the operation in PENDING (queued async work) instead
	// of IN_PROGRESS.
	Pending bool
	// TakeOverFenced lets the claim take over a running (PENDING or
	// IN_PROGRESS) record before its lease ends when the record was last
	// written under an older epoch than the shard's: its holder is fenced
	// out (every heartbeat, stage and finish it tries is refused) and can
	// never record a result, so its lease protects nothing the store can
	// see. Only an upstream call the holder already sent may still land:
	// set it only for an endpoint whose upstream deduplicates by operation
	// id and that has a resolve path (config.Endpoint.TakesOverFenced),
	// whose takeover resolves before it runs anything. See
	// docs/failover.md, "In-flight intents of a moved shard".
	TakeOverFenced bool
	// KeepStages keeps the recovery point (the last stage recorded) when
	// a RETRYABLE_FAILURE is taken over, so that the new attempt resumes
	// from it (an endpoint with on_retry: complete). By default the
	// takeover clears it: the failed attempt took no effect.
	KeepStages bool
	// DownstreamWindow, when positive, is how long the provider behind
	// the upstream deduplicates its own keys (config.Endpoint's
	// downstream_window). A record first claimed longer ago than this, by
	// the store's clock (Record.CreatedAt against the claim's statement
	// time), is never taken over and its unknown outcome is never handed
	// back to be resolved and re-run: the claim is WindowPassed (a
	// queue TakeOver fails with ErrDownstreamWindowPassed) and changes
	// nothing. Replays, mismatches and waits are unaffected.
	DownstreamWindow time.Duration
	// Members are the request's member digests (idempotency.Members,
	// encoded), stored with a new record so that a later Mismatch can
	// name what changed; nil stores none. Only with a FingerprintV2 (or
	// later) Fingerprint.
	Members []byte
	// FirstSent is when the client says it first sent the intent, zero
	// when it does not say. It is stored with a new record; a claim of an
	// existing record that names another time than the record's is a
	// Mismatch (another request), unless either is zero.
	FirstSent time.Time
}

// Claim is the decision on one key.
type Claim struct {
	Outcome Outcome
	// Record is the stored operation as the decision saw it.
	Record Record
	// Lease is set when the caller owns the operation (FirstRun, TakenOver).
	Lease *Lease
	// RetryAfter is how long an InFlight caller should wait.
	RetryAfter time.Duration
	// Fenced is set on a TakenOver claim whose lease was still live: its
	// holder wrote last under an older epoch and was fenced out
	// (ClaimRequest.TakeOverFenced).
	Fenced bool
}
