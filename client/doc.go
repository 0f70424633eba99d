// Package client is the Go SDK for calling an API fronted by idemcoord: it
// sends each business intent under one idempotency key and retries it until
// the server gives a final answer, so that the intent takes effect at most
// once however often the network, the gateway or the upstream fails.
//
// # One key per intent
//
// Call NewKey once per business intent ("charge order 17", "create user
// alice"), before the first attempt, and keep the key with the intent: Do
// and PostJSON send it on every retry, and a caller that retries Do itself
// (after a crash, from a queue) must send it again. A new user action is a
// new intent and gets a new key. Reusing a key for a different request is
// refused with 422 (ErrFingerprintMismatch); minting a new key for the same
// intent risks doing it twice.
//
// # What is retried
//
// Do retries, with capped exponential backoff and full jitter, and never
// sooner than the server's Retry-After:
//
//   - transport failures of one attempt: connection refused or reset, EOF,
//     a timeout of HTTPClient, a body cut off mid-read (not TLS certificate
//     errors, and not once the caller's context is done);
//   - 409 (operation in progress, or its outcome unknown), 429, 500, 502,
//     503 and 504, unless the response is a replay (Idempotent-Replayed:
//     true): a replay is the stored answer and will not change.
//
// Every attempt carries the same Idempotency-Key and the same body bytes,
// so the gateway runs the upstream at most once and replays its answer to
// the later attempts. Nothing else is retried: 400, 401, 404, 413, 422 and
// every other status are final.
//
// # Results
//
// A 2xx or 3xx answer is a *Response and a nil error. Any other final
// answer is a *Response and a *ProblemError, which carries the
// application/problem+json fields, including NewKeySafe: whether the caller
// may start the intent again under a new key without risking a double
// effect. When Do stops without a final answer (MaxAttempts used up, or the
// context ended while retrying) it returns a *GaveUpError (errors.Is
// ErrGaveUp): the intent may or may not have taken effect. Retry later with
// the same key to learn which; do not switch keys.
//
// # Cancelling async work
//
// Cancel(ctx, operationID) asks the gateway to cancel an async operation
// (DELETE /v1/operations/{id}) before its irreversible stage. It needs no
// key (cancelling is idempotent by itself), retries 429, 502 (the
// upstream gave no verdict), 503, 504 and transport failures, and stops at
// a 409 refusal. Giving up on a request, or dropping its connection, never
// cancels anything: only Cancel does.
//
// Redirects are not followed by the default HTTPClient: a 303 would turn
// the request into a GET without its body.
package client
