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
// # Several regions
//
// Config.Regions lists every region's gateway (ParseRegions reads
// "us-east=https://...,eu-west=https://..."; `idemd dev` prints such a
// line); BaseURL is the one-region form. Every region forwards a request
// to the region that owns the caller's actor, and the key makes a retry
// safe, so any region may take any attempt, and switching regions never
// runs an intent twice. The client:
//
//   - sends an intent first to the region the last answer named as the
//     owner (X-Idempotency-Region on an answer that carries an operation
//     id), saving the forwarding hop; else to the first usable region in
//     list order (list the nearest first). The owner is remembered per
//     Client: give each actor (token) its own Client.
//   - retries in the next region at once, without the contention backoff,
//     after an attempt that proved nothing ran: the connection or its TLS
//     handshake failed or the name did not resolve (the request was never
//     written), or a 503 that names no operation (region-unreachable,
//     ownership moving, a store down: the region refused before claiming
//     the key). A 503 region-failover is the endpoint's policy about the
//     actor's region, the same everywhere, and waits its Retry-After. Any
//     other failure is retried after the backoff; a transport failure
//     after the request was written also moves the retry to the next
//     region, with the same key, so the owner answers it from its record.
//   - keeps a circuit breaker per region: a transport failure, or a 503
//     saying the region itself cannot serve, opens it for 1 s; then the
//     region's GET /readyz is probed in the background, and only a 200
//     brings it back (each failed probe doubles the wait, up to 30 s).
//     Open regions are skipped while any other is usable.
//   - spends immediate switches from a budget (gRPC-style retry
//     throttling): a bucket of 10 tokens, a switch takes one while 5 would
//     be left, every answer that is not a refusal returns a tenth. Past it
//     the client still moves on, after the backoff, so a dead or refusing
//     region cannot multiply the load on the live ones.
//
// Every attempt counts against MaxAttempts, and every wait and breaker
// time runs on Config.Clock. The default HTTPClient gives up connecting
// after DefaultDialTimeout, so an unreachable region costs seconds, not
// the whole DefaultTimeout. A region that read the request and then
// stopped answering (a paused process keeps its connections open) costs
// at most the response-header timeout: the endpoint's upstream timeout
// (Config.UpstreamTimeout, Intent.UpstreamTimeout) plus DefaultAnswerSlack,
// and, with several regions, usually much less: once an attempt has
// waited Config.StallProbe (1 s) the client asks the region's /healthz,
// and again every StallProbe while it answers; a /healthz that does not
// answer within half a second says the process is stalled, and one that
// answers "Idemcoord-Etcd: unreachable" that it is cut off from etcd (its
// shards are about to move). Either way the attempt ends with
// ErrNoAnswerInTime, counts as one that may have run, and the retry goes
// to the next region under the same key and first-sent time, where the
// coordinator answers from the one run's record, waits for it, or takes
// it over once the paused region's lease is fenced. Set
// Config.UpstreamTimeout to the endpoints' configured upstream_timeout so
// a region that answers its /healthz but not the intent is left as soon
// as a live gateway would have answered.
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
// the same key to learn which; do not switch keys. When instead every
// attempt provably executed nothing (the gateway refused each before
// claiming the key, such as the reject policy's 503 while the actor's
// region is failed over, or no attempt could be sent) it returns a
// *NotExecutedError (errors.Is ErrNotExecuted): nothing ran and there is
// nothing to reconcile; retry later with the same key.
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
