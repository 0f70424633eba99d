// Package gateway is idemcoord's HTTP face: the coordinator that stands in
// front of an upstream API (gateway mode, in idemd) or wraps a Go service's
// handler (middleware mode), and speaks the contract in
// docs/http-contract.md.
//
// For each request to a coordinated endpoint it authenticates the caller,
// validates the Idempotency-Key, fingerprints the request, claims the key in
// the SQL store, and then either replays the stored answer, refuses (422,
// 409, 503), or runs the intent once — passing the operation id
// downstream — and records the result. The upstream's answer is classified
// by the endpoint's policy; a timeout after the request was sent is
// OUTCOME_UNKNOWN, resolved on a later retry by asking the upstream's resolve
// endpoint, never by running the intent again blindly.
//
// The request pipeline, top to bottom, by file:
//
//   - claim: coordinate.go (admit: key, body, fingerprint; the claim
//     rounds; decide), driven by rounds.go (route with claimToken, then one
//     step per round, every round's store calls within one budget of
//     internal/retry);
//   - run: run.go (perform: the lease, the send, the record), execute.go
//     (the upstream call), record.go (the answer classified and recorded);
//   - proxy: execute.go's Proxy, the Executor in gateway mode, and
//     proxysend.go (its request sent once through the transport, the
//     answer read whole).
//
// The cancel path (cancel.go, cancelround.go) runs on the same round driver.
//
// Tracing is a decoration, not a step of the pipeline (tracing.go): the
// request span wraps the handler, and the pipeline calls the store and the
// executor through Gateway.store and Gateway.next, which New wraps so that
// the claim (Begin), the upstream call (Execute) and the result's finish
// (Finish) each run in their span, and a passthrough (Pass) carries the
// request span upstream (with tracing off, the no-op provider, they are
// the bare store and executor). The pipeline's code reads as
// plain store and executor calls.
package gateway
