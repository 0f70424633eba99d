// Package storeotel decorates a store.Store with OpenTelemetry's database
// client conventions: every call is a client span (SpanKindClient) named
// by its operation, with db.system.name, db.operation.name, db.namespace
// when known, and on failure error.type and the SQLSTATE as
// db.response.status_code; and every call is one observation of the
// db.client.operation.duration histogram (Prometheus:
// db_client_operation_duration_seconds) with the same attributes.
//
// The operation names are the store contract's calls (claim for Begin,
// finish, heartbeat, take_over, ...), one logical operation each: a call
// may run several SQL statements and, inside the backend's retry loop,
// several transactions. The retries themselves show as the store's
// idemcoord.retry events on the call's span, each with the SQLSTATE that
// made the attempt run again (40001, a serialization failure, among them);
// the span and the histogram show the call's final outcome.
//
// store.ErrNotFound is an answer, not a failure: a Read or Lookup that
// finds nothing has no error.type.
package storeotel
