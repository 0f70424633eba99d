// Package idemconv names the OpenTelemetry attributes idemcoord adds to the
// semantic conventions' own: every one under the single "idemcoord."
// namespace, so a trace backend's attribute list shows them together and
// none collides with a convention's name. docs/runbook.md (Telemetry)
// lists them with the spans and metrics that carry them.
//
// None ever carries a raw idempotency key, a body or a token: a key goes
// out only as KeyHash.
package idemconv

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/idemcoord/idemcoord/idempotency"
)

// The idemcoord attribute keys.
const (
	// Endpoint is the configured endpoint's name ("(unmatched)" for a
	// request no endpoint matched).
	Endpoint = attribute.Key("idemcoord.endpoint")
	// OperationID is the operation id the key's record carries.
	OperationID = attribute.Key("idemcoord.operation_id")
	// Decision is the claim's decision (first_run, replay,
	// fingerprint_conflict, in_progress, takeover, outcome_unknown).
	Decision = attribute.Key("idemcoord.decision")
	// Result is how the request was answered, as the result label of
	// idemcoord_http_requests_total.
	Result = attribute.Key("idemcoord.result")
	// State is the record's state a write left it in (COMPLETED, ...).
	State = attribute.Key("idemcoord.state")
	// Region is the region whose gateway served the request.
	Region = attribute.Key("idemcoord.region")
	// Shard is the shard the actor hashes to.
	Shard = attribute.Key("idemcoord.shard")
	// KeyHash is "sha256:" and the first 16 hex digits of the key's hash,
	// as the logs write a key: enough to find one key's spans and log
	// lines, never the key.
	KeyHash = attribute.Key("idemcoord.key_hash")
	// RetryOp names the store's retry loop an attempt ran again in (on
	// the RetryEvent).
	RetryOp = attribute.Key("idemcoord.retry.op")
)

// RetryEvent is the name of the span event the store adds for every
// attempt it runs again (a serialization failure, 40001, among them),
// with the attempt's SQLSTATE as db.response.status_code.
const RetryEvent = "idemcoord.retry"

// KeyHashOf is the KeyHash attribute of k: the same text as k's LogValue.
func KeyHashOf(k idempotency.Key) attribute.KeyValue {
	return KeyHash.String(k.LogValue().String())
}
