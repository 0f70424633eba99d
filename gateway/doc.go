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
// The request pipeline is declared once, in order, in pipeline.go; each
// stage is a package of its own, a type holding only what it uses, that
// answers the client through the shared per-request value
// (gateway/exchange) and never takes the Gateway:
//
//   - admission (gateway/admission): key, first-sent, body and media
//     checks, multipart, the fingerprint and its budget, per-actor limits;
//   - routing (gateway/routing): owner routing, holds during moves and
//     failovers, forwarding, the fence cache, and the round driver
//     (Rounds: route, then one step per round, every round's store calls
//     within one budget of internal/retry);
//   - claim and decide (pipeline.go, decide.go): the store's verdict, and
//     a switch over it;
//   - replay (gateway/replay): the recorded outcome;
//   - upstream (gateway/upstream): the executors (Proxy, HandlerExecutor),
//     a run under the claim's lease, the answer classified and recorded,
//     unknown outcomes resolved;
//   - async (gateway/async): the 202 and the queue, recovery, the move
//     sweep and the cancel rounds, under a lifecycle component of its own
//     (the Gateway's Start, Close, Done and Err are its).
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
