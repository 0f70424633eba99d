package history

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"time"
)

// Kind says what an Operation records.
type Kind string

// Operation kinds.
const (
	// KindRequest is one HTTP attempt of an intent against a region.
	KindRequest Kind = "request"
	// KindProbe is a drill-side probe of the store (a stale-epoch write, a
	// provoked serialization failure) and what it observed.
	KindProbe Kind = "probe"
	// KindFault is a fault window: Call is when it was injected, Return
	// when it was healed.
	KindFault Kind = "fault"
)

// ErrorClass says how a request failed without a final HTTP answer.
type ErrorClass string

// Error classes. Only ErrBeforeSend proves the request had no effect.
const (
	// ErrNone: an HTTP status came back.
	ErrNone ErrorClass = ""
	// ErrBeforeSend: the connection failed before the request was written
	// (dial refused, reset before the first byte): it cannot have run.
	ErrBeforeSend ErrorClass = "network_before_send"
	// ErrAfterSend: the request was written and the answer was lost.
	ErrAfterSend ErrorClass = "network_after_send"
	// ErrTimeout: the client's deadline passed while waiting.
	ErrTimeout ErrorClass = "timeout"
)

// Probe names recorded in Operation.Probe.
const (
	// ProbeStaleEpochRejected: a write carrying an old epoch was refused by
	// the store's fence, as it must be.
	ProbeStaleEpochRejected = "stale_epoch_rejected"
	// ProbeStaleEpochAccepted: a write carrying an old epoch committed. It
	// is an I3 violation by itself.
	ProbeStaleEpochAccepted = "stale_epoch_accepted"
	// ProbeRetry40001: a serializable transaction failed with SQLSTATE
	// 40001 and its whole-transaction retry then committed.
	ProbeRetry40001 = "retry_40001"
	// ProbePlannedMove: the drill moved a shard its traffic uses to another
	// region by the planned, drained transfer (`idemctl move`), under load.
	// The fence audit, not this record, is what the checker counts.
	ProbePlannedMove = "planned_move"
	// ProbeStoreFailover: a failover of the replicated store a fault
	// caused. Call is the primary's death, Return the first write
	// committed on its successor (0 if none was seen); SentTo names the
	// old primary, ServedBy the new one; Detail the timelines the old
	// one rejoined on.
	ProbeStoreFailover = "store_failover"
)

// Operation is one recorded event. Times are nanoseconds since the
// recorder's start, from the monotonic clock, so they order correctly even
// when the wall clock steps.
type Operation struct {
	// Seq is the recorder's sequence number, unique within a run.
	Seq int64 `json:"seq"`
	// Kind is KindRequest, KindProbe or KindFault.
	Kind Kind `json:"kind"`
	// Call and Return bracket the event, in nanoseconds since the start.
	Call   int64 `json:"call_ns"`
	Return int64 `json:"return_ns"`
	// ClientID identifies the drill client (one per actor worker).
	ClientID int `json:"client"`
	// Actor is the actor scope ("tenant/subject") the request ran as.
	Actor string `json:"actor,omitempty"`
	// Intent numbers the business intent; its retries share it.
	Intent int64 `json:"intent,omitempty"`
	// Attempt is 1 for an intent's first attempt.
	Attempt int `json:"attempt,omitempty"`
	// ClientCall numbers, per client, the client-level call the attempt
	// belongs to when one call makes several attempts (the multi-region
	// SDK's Do, with its own retries inside; the drill's probe, which
	// retries one intent until it is answered: the intent's number); 0
	// when every attempt is a call of its own. Availability is counted over calls: what a user's
	// code sees.
	ClientCall int64 `json:"client_call,omitempty"`
	// Endpoint is "METHOD /path".
	Endpoint string `json:"endpoint,omitempty"`
	// Key is the Idempotency-Key. Drill keys are synthetic; anything that
	// logs an Operation logs KeyHash instead.
	Key string `json:"key,omitempty"`
	// Reference is the business reference the body carries (one per
	// intent), which joins the history to the ledger.
	Reference string `json:"reference,omitempty"`
	// BodyHash is the hex SHA-256 of the request body.
	BodyHash string `json:"body_hash,omitempty"`
	// SentTo is the region the request was sent to.
	SentTo string `json:"sent_to,omitempty"`
	// ServedBy is X-Idempotency-Region: the region that answered.
	ServedBy string `json:"served_by,omitempty"`
	// Status is the HTTP status, 0 if none came back.
	Status int `json:"status,omitempty"`
	// Replayed is Idempotent-Replayed: true.
	Replayed bool `json:"replayed,omitempty"`
	// OperationID is X-Idempotency-Operation-Id.
	OperationID string `json:"operation_id,omitempty"`
	// ResourceID is the business resource the answer names (payment_id
	// from the body, or the Location header).
	ResourceID string `json:"resource_id,omitempty"`
	// RetryAfter is the answer's Retry-After in seconds, 0 if none (a
	// reject-policy 503 must carry one).
	RetryAfter int `json:"retry_after,omitempty"`
	// ResponseHash is the hex SHA-256 of the response body.
	ResponseHash string `json:"response_hash,omitempty"`
	// Error is how the attempt failed without a status.
	Error ErrorClass `json:"error,omitempty"`
	// Cut marks an attempt without an answer that the drill itself ended
	// (its caller's context ended: the main phase was over), not an
	// outcome the cluster gave: the report leaves it out of availability
	// and in-flight times. The checker still treats it as an unknown
	// outcome.
	Cut bool `json:"cut,omitempty"`
	// AckReplay marks an attempt of the drill's last phase: an intent an
	// answer acknowledged, re-sent with its key and body once everything
	// healed, whose answer must be the acknowledged one (acked_lost).
	AckReplay bool `json:"ack_replay,omitempty"`
	// Fault is the fault's kind (KindFault), e.g. "kill_region"; on a
	// ProbeStoreFailover, the kind of the fault that caused it.
	Fault string `json:"fault,omitempty"`
	// Effective is, for a fault, when its injection took effect (since
	// the recorder's start, like Call): the injector returned, so a
	// killed region's process was reaped, a paused one stopped, a link
	// cut. A kill or pause first holds the region's upstream for a
	// second so calls are in flight when it dies: Call is before that
	// hold, Effective after it. 0 (histories written before it) reads as
	// Call.
	Effective int64 `json:"effective_ns,omitempty"`
	// Link is, for a fault that acts on one of a region's links
	// (latency, reset_peer), which: "etcd", "sql", "peer", "upstream".
	Link string `json:"link,omitempty"`
	// Skipped marks a fault the cluster could not inject: its window
	// disturbed nothing.
	Skipped bool `json:"skipped,omitempty"`
	// Probe names the probe event (KindProbe), e.g. ProbeRetry40001.
	Probe string `json:"probe,omitempty"`
	// Shard is the shard the event concerns, -1 if none.
	Shard int `json:"shard"`
	// Detail is free text for people (a fault's description, a probe's
	// error); never a key or a body.
	Detail string `json:"detail,omitempty"`
}

// Hash returns the hex SHA-256 of b, as BodyHash and ResponseHash hold it.
func Hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// KeyHash returns "sha256:" and the first 16 hex digits of the key's
// SHA-256, the form logs and reports use.
func KeyHash(key string) string {
	s := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(s[:8])
}

// LogValue keeps the raw key out of logs.
func (o Operation) LogValue() slog.Value {
	return slog.GroupValue(slog.Int64("seq", o.Seq), slog.String("kind", string(o.Kind)),
		slog.String("key", KeyHash(o.Key)), slog.String("sent_to", o.SentTo),
		slog.String("served_by", o.ServedBy), slog.Int("status", o.Status), slog.String("error", string(o.Error)))
}

// Effect returns when a fault took effect: Effective, or Call in a
// history written before faults recorded it.
func (o Operation) Effect() int64 {
	if o.Effective != 0 {
		return o.Effective
	}
	return o.Call
}

// Duration returns how long the event took.
func (o Operation) Duration() time.Duration { return time.Duration(o.Return - o.Call) }

// Acknowledged reports a success the client saw: a 2xx answer.
func (o Operation) Acknowledged() bool {
	return o.Kind == KindRequest && o.Status >= 200 && o.Status < 300
}

// Mismatch reports a 422: the key was used with a different body.
func (o Operation) Mismatch() bool {
	return o.Kind == KindRequest && o.Status == http.StatusUnprocessableEntity
}

// Unknown reports an attempt whose effect is unknown: the request may have
// run. That is a lost answer after sending, a timeout, or a 5xx (a gateway
// 504 is the upstream timing out; a 500/502/503 may come after the claim).
func (o Operation) Unknown() bool {
	if o.Kind != KindRequest {
		return false
	}
	switch o.Error {
	case ErrAfterSend, ErrTimeout:
		return true
	case ErrBeforeSend:
		return false
	}
	return o.Status >= 500
}

// Ambiguous reports an attempt whose outcome the client truly could not
// know: a lost answer, a timeout, or a 5xx other than 503. A 503 is how the
// coordinator says it ran nothing (failover reject, owner suspect), so it
// counts as "may have happened" for the register (Unknown) but not as an
// ambiguity a drill must see resolved.
func (o Operation) Ambiguous() bool {
	return o.Unknown() && o.Status != http.StatusServiceUnavailable
}

// Ends reports an answer that ends an intent: a success, or a 4xx that
// retrying cannot change (not 408, 409, 425 or 429).
func (o Operation) Ends() bool {
	switch {
	case o.Acknowledged():
		return true
	case o.Status == http.StatusConflict, o.Status == http.StatusRequestTimeout,
		o.Status == http.StatusTooEarly, o.Status == http.StatusTooManyRequests:
		return false
	}
	return o.Kind == KindRequest && o.Status >= 400 && o.Status < 500
}
