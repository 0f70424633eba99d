package gateway

import (
	"context"
	"errors"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// storeRetryAfter is the Retry-After of a 503 while the store is
// unreachable (exchange.StoreRetryAfter).
const storeRetryAfter = exchange.StoreRetryAfter

// storeCallTimeout bounds one store call: a store that does not answer in
// this long is treated as down (503), not waited on forever.
var storeCallTimeout = retry.Default.Store.Total

// call is one coordinated request as it moves through the protocol: the
// stages' shared value (exchange.Request) and what only the pipeline
// keeps.
type call struct {
	exchange.Request
	// waitUntil is when a wait for the run in flight ends (await.go),
	// set the first time the request finds its operation in flight.
	waitUntil time.Time
	// shadow is set on a shadow-mode endpoint (shadow.go).
	shadow *shadowRun
}

// newCall is the call of a request to ep by actor, started at start.
func (g *Gateway) newCall(w http.ResponseWriter, r *http.Request, ep *config.Endpoint, actor string, start time.Time) *call {
	return &call{Request: exchange.Request{W: w, R: r, Endpoint: ep, Policy: g.policies[ep.Name], Actor: actor, Start: start, Outcomes: g.outcomes}}
}

// coordinate runs the protocol of docs/http-contract.md for one request.
func (g *Gateway) coordinate(w http.ResponseWriter, r *http.Request, ep *config.Endpoint, actor string, start time.Time) {
	g.coordinateCall(g.newCall(w, r, ep, actor, start))
}

// coordinateCall runs the protocol for c, top to bottom: admit the request
// (key, body, fingerprint), then claim rounds (route, claim, decide), each
// of which may run the intent (perform, execute, record) and answer.
func (g *Gateway) coordinateCall(c *call) {
	// Once the coordinator has the request it carries it through to a
	// recorded outcome even if the client hangs up: a claim or a result
	// abandoned half-way would hold the key for a whole lease.
	ctx := context.WithoutCancel(c.R.Context())
	req, ok := g.admit(c)
	if !ok {
		return
	}
	// A few rounds: a stale fence is re-read once, and resolving an unknown
	// outcome (or losing a run to a takeover) is followed by claiming again.
	err := g.rounds(ctx, c, retry.NewShare(retry.Default.Store), claimRounds, func(r round) stepResult {
		req.Token = r.Token
		sctx, done := r.store(ctx)
		c.ClaimedAt = g.clock.Now()
		claim, err := g.store.Begin(sctx, req)
		done()
		switch {
		case errors.Is(err, fencing.ErrStaleEpoch):
			return stale(err)
		case errors.Is(err, store.ErrFingerprintVersion):
			// Stored by an instance with a newer fingerprint algorithm:
			// this one cannot compare. Another (upgraded) instance can.
			exchange.SetKeyStatus(c.W, KeyStatusInProgress)
			c.RefuseWait("in_progress", exchange.Problem{Type: "in-progress", Title: "cannot compare with the stored request",
				Detail: "the key's record was fingerprinted by a newer version; retry with the same key",
				Status: http.StatusConflict}, time.Second)
			return answered
		case err != nil:
			c.StoreDown(err)
			return answered
		}
		if g.decide(ctx, c, req, claim) {
			return another
		}
		return answered
	})
	switch {
	case err == nil || errors.Is(err, errRouted):
		// Answered, or forwarded, redirected or refused (see shadowRun.relay).
	case errors.Is(err, errNotOwner), errors.As(err, new(fenceRefused)):
		c.RegionUnavailable(err) // another region owns the shard, or the fence kept refusing this one
	case errors.Is(err, errRoundsOut):
		// Resolved outcomes kept changing under us.
		exchange.SetKeyStatus(c.W, KeyStatusInProgress)
		c.RefuseWait("in_progress", exchange.Problem{Type: "in-progress", Title: "operation is changing state",
			Detail: "retry with the same key", Status: http.StatusConflict}, time.Second)
	default:
		c.StoreDown(err)
	}
}

// errKeyRepeated refuses a request with more than one key header.
var errKeyRepeated = exchange.NewInvalid("more than one Idempotency-Key header")

// claimRounds bounds a request's claim rounds (see rounds).
const claimRounds = 4

// admit reads and checks what the claim needs: the key, the first-sent
// time, the body (within its cap and declared type) and its fingerprint.
// It answers the client itself, and reports false, when the request is
// refused or needs no coordination.
func (g *Gateway) admit(c *call) (store.ClaimRequest, bool) {
	w, r, ep, actor, start := c.W, c.R, c.Endpoint, c.Actor, c.Start
	values := r.Header.Values(HeaderKey)
	if len(values) == 0 {
		if c.Policy.KeyRequired {
			c.Refuse("missing_key", exchange.Problem{Type: "missing-key", Title: "Idempotency-Key header required",
				Detail: "this endpoint runs a request only under an Idempotency-Key: send one per intent " +
					"(a UUID), the same on every retry of it; nothing was executed",
				Status: http.StatusBadRequest, NewKeySafe: true})
			return store.ClaimRequest{}, false
		}
		g.passthrough(w, r, actor, ep.Name, start)
		return store.ClaimRequest{}, false
	}
	key, err := idempotency.ParseKeyHeader(values[0])
	if err == nil && len(values) > 1 {
		err = errKeyRepeated
	}
	if err != nil {
		c.Refuse("invalid_key", exchange.Problem{Type: "invalid-key", Title: "invalid Idempotency-Key",
			Detail: exchange.Reason(err, "the Idempotency-Key header does not parse"), Status: http.StatusBadRequest, NewKeySafe: true})
		return store.ClaimRequest{}, false
	}
	c.Key = key
	firstSent, refused, bad := g.firstSent(c)
	if bad {
		c.Refuse("first_sent_refused", refused)
		return store.ClaimRequest{}, false
	}
	if c.Body, err = readBody(r, c.Policy.MaxRequestBytes); err != nil {
		c.Refuse("body_too_large", exchange.Problem{Type: "body-too-large", Title: "request body over the endpoint's cap",
			Detail: bodyCapDetail(c.Policy.MaxRequestBytes), Status: http.StatusRequestEntityTooLarge, NewKeySafe: true})
		return store.ClaimRequest{}, false
	}
	if !ep.AcceptsBody(r.Header.Get("Content-Type"), len(c.Body)) {
		g.unsupportedMediaType(c)
		return store.ClaimRequest{}, false
	}
	if enc := contentEncoding(r, ep, len(c.Body)); enc != "" {
		g.unsupportedEncoding(c, enc)
		return store.ClaimRequest{}, false
	}
	// Bounded: a burst of large bodies waits here, or gets 503.
	release, err := g.cfg.FingerprintBudget.Acquire(r.Context(), int64(len(c.Body)))
	if err != nil {
		g.fingerprintBusy(c)
		return store.ClaimRequest{}, false
	}
	fp, err := g.fingerprint(c, 0)
	release()
	if err != nil {
		c.Refuse("malformed_body", exchange.Problem{Type: "malformed-body", Title: "request body cannot be fingerprinted",
			Detail: exchange.Reason(err, "the request body cannot be read as its declared type"), Status: http.StatusBadRequest, NewKeySafe: true})
		return store.ClaimRequest{}, false
	}
	return store.ClaimRequest{
		Scope:         store.Scope{Actor: actor, Endpoint: ep.Name, Key: key},
		Fingerprint:   fp,
		Refingerprint: func(v int) (idempotency.Fingerprint, error) { return g.fingerprint(c, v) },
		Worker:        g.cfg.Worker,
		Lease:         c.Policy.Lease,
		TTL:           c.Policy.TTL,
		ReplayTTL:     c.Policy.ReplayTTL,
		Pending:       c.Policy.Async,
		// A holder fenced out by a move is taken over at once where the
		// upstream deduplicates (inflight.go).
		TakeOverFenced: ep.TakesOverFenced(),
		FirstSent:      firstSent,
		KeepStages:     ep.Completes(),
	}, true
}

// decide acts on a claim. again asks coordinate to claim once more (after
// an unknown outcome was resolved).
func (g *Gateway) decide(ctx context.Context, c *call, req store.ClaimRequest, claim store.Claim) (again bool) {
	rec := claim.Record
	exchange.AdvertiseClaim(c.W, claim)
	if c.Policy.Async && claim.Outcome == store.Unresolved && g.resolve(ctx, c, req.Token, rec) {
		return true
	}
	if (claim.Outcome == store.Replayed || claim.Outcome == store.InFlight) && !c.Charged {
		if g.limited(c) {
			return false
		}
		c.Charged = true // one token per request, however many rounds (a wait, then the replay)
	}
	exchange.SetKeyStatus(c.W, exchange.ClaimKeyStatus(claim))
	if c.Policy.Async && claim.Outcome == store.Replayed && rec.State == idempotency.Cancelled {
		if rec.Compacted {
			g.replayExpired(c, rec) // the cancellation's answer is gone; it is still no second task
			return false
		}
		// The cancellation is the answer: replayed, never a second task.
		g.metrics.request(ctx, c.Endpoint.Name, "replay", c.Start)
		writeSnapshot(c.W, rec, true)
		return false
	}
	if c.Policy.Async && (claim.Outcome == store.Replayed || claim.Outcome == store.InFlight || claim.Outcome == store.Unresolved) {
		// A retry of an async request gets the same task, whatever its state.
		exchange.SetKeyStatus(c.W, exchange.RecordKeyStatus(rec))
		g.metrics.request(ctx, c.Endpoint.Name, "async_accepted", c.Start)
		writeAccepted(c.W, rec.OperationID, string(rec.State))
		return false
	}
	switch claim.Outcome {
	case store.Replayed:
		if c.Endpoint.Replay.Reference() && c.shadow == nil && rec.Snapshot.ResourceID != "" &&
			rec.State == idempotency.Completed && !rec.Purged {
			g.replayReference(ctx, c, rec)
			return false
		}
		if rec.Compacted {
			g.replayExpired(c, rec)
			return false
		}
		rec, err := g.revealRecord(c.W, c.Actor, rec)
		if err != nil {
			g.secretUnavailable(c, err)
			return false
		}
		g.metrics.request(ctx, c.Endpoint.Name, "replay", c.Start)
		writeSnapshot(c.W, rec, true)
	case store.Mismatch:
		// The operation exists: its id and state say which one the key
		// belongs to (GET /v1/operations/{id} shows it to the same actor).
		same := sameRequest(req, rec)
		c.Refuse("fingerprint_conflict", exchange.Problem{Type: "fingerprint-mismatch",
			Title:  "Idempotency-Key reused with a different request",
			Detail: mismatchDetail(rec, req.FirstSent, same), Status: http.StatusUnprocessableEntity,
			OperationID: rec.OperationID.String(), OperationState: string(rec.State),
			NewKeySafe: !same || tookNoEffect(rec.State)})
	case store.InFlight:
		done, again, answered, leaseLeft := g.awaitRun(c, claim)
		if done != nil {
			return g.decide(ctx, c, req, store.Claim{Outcome: store.Replayed, Record: *done})
		}
		if again || answered {
			return again
		}
		c.RefuseWait("in_progress", exchange.Problem{Type: "in-progress", Title: "operation in progress",
			Detail: "another request with this key is being processed", Status: http.StatusConflict,
			OperationID: rec.OperationID.String(), OperationState: string(rec.State)}, g.durations[c.Endpoint.Name].retryAfter(leaseLeft))
	case store.Unresolved:
		if g.resolve(ctx, c, req.Token, rec) {
			return true
		}
		c.RefuseWait("outcome_unknown", exchange.Problem{Type: "outcome-unknown", Title: "operation outcome unknown",
			Detail: "the upstream may have run it; it is being reconciled", Status: http.StatusConflict,
			OperationID: rec.OperationID.String(), OperationState: string(idempotency.OutcomeUnknown)}, time.Second)
	case store.FirstRun, store.TakenOver:
		result := "first_run"
		if claim.Outcome == store.TakenOver {
			result = "takeover"
		}
		if c.Policy.Async {
			g.accept(c, claim, result)
			return false
		}
		return g.run(ctx, c, claim, result)
	}
	return false
}

// resolve asks the upstream about an OUTCOME_UNKNOWN operation and records
// the verdict. It reports whether the record moved on (claim again).
func (g *Gateway) resolve(ctx context.Context, c *call, tok fencing.Token, rec store.Record) bool {
	in := Invocation{Request: c.R, Body: c.Body, OperationID: rec.OperationID, Actor: c.Actor, Endpoint: c.Endpoint}
	var res store.Result
	switch v, a := g.next.Resolve(ctx, in); v {
	case Ran:
		// Classified like a live answer: a retryable status re-runs on the
		// next retry, exactly as if the upstream had answered in time.
		res = g.result(c, a)
	case NotRun:
		res = store.Result{State: idempotency.RetryableFailure, ErrorSummary: "upstream confirmed it never ran"}
	default:
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, storeCallTimeout)
	err := g.store.Resolve(sctx, rec, tok, res)
	cancel()
	if err != nil && !errors.Is(err, store.ErrLostOwnership) {
		g.log.WarnContext(ctx, "resolve failed", "operation_id", rec.OperationID, "err", err)
		return false
	}
	g.waits.kick(rec.OperationID)
	g.log.InfoContext(ctx, "outcome unknown resolved", "operation_id", rec.OperationID, "state", res.State)
	return true
}

func (g *Gateway) fingerprint(c *call, version int) (idempotency.Fingerprint, error) {
	if version != 0 && version != idempotency.FingerprintV1 {
		return idempotency.Fingerprint{}, errors.New("unknown fingerprint version")
	}
	req := idempotency.Request{Method: c.R.Method, Path: c.R.URL.Path,
		Query: c.R.URL.RawQuery, ContentType: c.R.Header.Get("Content-Type"), Body: c.Body}
	if c.Endpoint.DeclaredBody() == config.BodyMultipart && len(c.Body) > 0 {
		canon, err := canonicalMultipart(req.ContentType, c.Body)
		if err != nil {
			return idempotency.Fingerprint{}, err
		}
		req.ContentType, req.Body = multipartMediaType, canon
		// The body's cap was checked before reading; the form, a few
		// dozen bytes a part, may come out a little longer than a body of
		// many tiny parts.
		opts := c.Policy.Fingerprint
		opts.MaxBytes = max(opts.MaxBytes, int64(len(canon)))
		return idempotency.ComputeFingerprint(req, opts)
	}
	return idempotency.ComputeFingerprint(req, c.Policy.Fingerprint)
}

// readBody reads at most limit bytes; more is an error. A body of declared
// length is read into one buffer of that length.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, errors.New("body too large")
	}
	b, err := readAtMost(r.Body, r.ContentLength, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, errors.New("body too large")
	}
	return b, nil
}
