package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/store"
)

// storeRetryAfter is the Retry-After of a 503 while the store is
// unreachable: long enough not to hammer a recovering database, short
// enough that a blip costs a client one second.
const storeRetryAfter = time.Second

// storeCallTimeout bounds one store call: a store that does not answer in
// this long is treated as down (503), not waited on forever.
var storeCallTimeout = retry.Default.Store.Total

// call is one coordinated request as it moves through the protocol.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	ep     *config.Endpoint
	policy idempotency.Policy
	actor  string
	key    idempotency.Key
	body   []byte
	start  time.Time
	// claimedAt is when the last claim was sent to the store, by the
	// gateway's clock: the lease it won runs from no earlier than this.
	claimedAt time.Time
	// waitUntil is when a wait for the run in flight ends (await.go),
	// set the first time the request finds its operation in flight.
	waitUntil time.Time
	// charged is set once the request took its token of the endpoint's
	// per-actor limit (limit.go).
	charged bool
	// shadow is set on a shadow-mode endpoint (shadow.go).
	shadow *shadowRun
}

// coordinate runs the protocol of docs/http-contract.md for one request.
func (g *Gateway) coordinate(w http.ResponseWriter, r *http.Request, ep *config.Endpoint, actor string, start time.Time) {
	g.coordinateCall(&call{w: w, r: r, ep: ep, policy: g.policies[ep.Name], actor: actor, start: start})
}

// coordinateCall runs the protocol for c, top to bottom: admit the request
// (key, body, fingerprint), then claim rounds (route, claim, decide), each
// of which may run the intent (perform, execute, record) and answer.
func (g *Gateway) coordinateCall(c *call) {
	// Once the coordinator has the request it carries it through to a
	// recorded outcome even if the client hangs up: a claim or a result
	// abandoned half-way would hold the key for a whole lease.
	ctx := context.WithoutCancel(c.r.Context())
	req, ok := g.admit(c)
	if !ok {
		return
	}
	// A few rounds: a stale fence is re-read once, and resolving an unknown
	// outcome (or losing a run to a takeover) is followed by claiming again.
	err := g.rounds(ctx, c, retry.NewShare(retry.Default.Store), claimRounds, func(r round) stepResult {
		req.Token = r.Token
		sctx, done := r.store(ctx)
		c.claimedAt = g.clock.Now()
		claim, err := g.store.Begin(sctx, req)
		done()
		switch {
		case errors.Is(err, fencing.ErrStaleEpoch):
			return stale(err)
		case errors.Is(err, store.ErrFingerprintVersion):
			// Stored by an instance with a newer fingerprint algorithm:
			// this one cannot compare. Another (upgraded) instance can.
			setKeyStatus(c.w, KeyStatusInProgress)
			g.refuseWait(c, "in_progress", problem{Type: "in-progress", Title: "cannot compare with the stored request",
				Detail: "the key's record was fingerprinted by a newer version; retry with the same key",
				Status: http.StatusConflict}, time.Second)
			return answered
		case err != nil:
			g.storeDown(c, err)
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
		g.regionUnavailable(c, err) // another region owns the shard, or the fence kept refusing this one
	case errors.Is(err, errRoundsOut):
		// Resolved outcomes kept changing under us.
		setKeyStatus(c.w, KeyStatusInProgress)
		g.refuseWait(c, "in_progress", problem{Type: "in-progress", Title: "operation is changing state",
			Detail: "retry with the same key", Status: http.StatusConflict}, time.Second)
	default:
		g.storeDown(c, err)
	}
}

// claimRounds bounds a request's claim rounds (see rounds).
const claimRounds = 4

// admit reads and checks what the claim needs: the key, the first-sent
// time, the body (within its cap and declared type) and its fingerprint.
// It answers the client itself, and reports false, when the request is
// refused or needs no coordination.
func (g *Gateway) admit(c *call) (store.ClaimRequest, bool) {
	w, r, ep, actor, start := c.w, c.r, c.ep, c.actor, c.start
	values := r.Header.Values(HeaderKey)
	if len(values) == 0 {
		if c.policy.KeyRequired {
			g.refuse(c, "missing_key", problem{Type: "missing-key", Title: "Idempotency-Key header required",
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
		err = errors.New("more than one Idempotency-Key header")
	}
	if err != nil {
		g.refuse(c, "invalid_key", problem{Type: "invalid-key", Title: "invalid Idempotency-Key",
			Detail: err.Error(), Status: http.StatusBadRequest, NewKeySafe: true})
		return store.ClaimRequest{}, false
	}
	c.key = key
	firstSent, refused, bad := g.firstSent(c)
	if bad {
		g.refuse(c, "first_sent_refused", refused)
		return store.ClaimRequest{}, false
	}
	if c.body, err = readBody(r, c.policy.MaxRequestBytes); err != nil {
		g.refuse(c, "body_too_large", problem{Type: "body-too-large", Title: "request body over the endpoint's cap",
			Detail: bodyCapDetail(c.policy.MaxRequestBytes), Status: http.StatusRequestEntityTooLarge, NewKeySafe: true})
		return store.ClaimRequest{}, false
	}
	if !ep.AcceptsBody(r.Header.Get("Content-Type"), len(c.body)) {
		g.unsupportedMediaType(c)
		return store.ClaimRequest{}, false
	}
	if enc := contentEncoding(r, ep, len(c.body)); enc != "" {
		g.unsupportedEncoding(c, enc)
		return store.ClaimRequest{}, false
	}
	// Bounded: a burst of large bodies waits here, or gets 503.
	release, err := g.cfg.FingerprintBudget.Acquire(r.Context(), int64(len(c.body)))
	if err != nil {
		g.fingerprintBusy(c)
		return store.ClaimRequest{}, false
	}
	fp, err := g.fingerprint(c, 0)
	release()
	if err != nil {
		g.refuse(c, "malformed_body", problem{Type: "malformed-body", Title: "request body cannot be fingerprinted",
			Detail: err.Error(), Status: http.StatusBadRequest, NewKeySafe: true})
		return store.ClaimRequest{}, false
	}
	return store.ClaimRequest{
		Scope:         store.Scope{Actor: actor, Endpoint: ep.Name, Key: key},
		Fingerprint:   fp,
		Refingerprint: func(v int) (idempotency.Fingerprint, error) { return g.fingerprint(c, v) },
		Worker:        g.cfg.Worker,
		Lease:         c.policy.Lease,
		TTL:           c.policy.TTL,
		ReplayTTL:     c.policy.ReplayTTL,
		Pending:       c.policy.Async,
		// A holder fenced out by a move is taken over at once where the
		// upstream deduplicates (inflight.go).
		TakeOverFenced: ep.TakesOverFenced(),
		FirstSent:      firstSent,
		KeepStages:     ep.Completes(),
		Members:        g.members(c), // members.go
		// Past the provider's key window nothing is sent again (window.go).
		DownstreamWindow: ep.DownstreamWindow,
	}, true
}

// regionUnavailable answers 503: another region owns the actor's shard.
func (g *Gateway) regionUnavailable(c *call, err error) {
	g.log.WarnContext(c.r.Context(), "region does not own the shard", "endpoint", c.ep.Name, "err", err)
	g.refuseWait(c, "region_unavailable", problem{Type: "region-unavailable",
		Title:  "this region does not own the actor now",
		Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, time.Second)
}

// decide acts on a claim. again asks coordinate to claim once more (after
// an unknown outcome was resolved).
func (g *Gateway) decide(ctx context.Context, c *call, req store.ClaimRequest, claim store.Claim) (again bool) {
	rec := claim.Record
	advertiseClaim(c.w, claim)
	if c.policy.Async && claim.Outcome == store.Unresolved && g.resolve(ctx, c, req.Token, rec) {
		return true
	}
	if (claim.Outcome == store.Replayed || claim.Outcome == store.InFlight) && !c.charged {
		if g.limited(c) {
			return false
		}
		c.charged = true // one token per request, however many rounds (a wait, then the replay)
	}
	setKeyStatus(c.w, claimKeyStatus(claim))
	if c.policy.Async && claim.Outcome == store.Replayed && rec.State == idempotency.Cancelled {
		if rec.Compacted {
			g.replayExpired(c, rec) // the cancellation's answer is gone; it is still no second task
			return false
		}
		// The cancellation is the answer: replayed, never a second task.
		g.metrics.request(ctx, c.ep.Name, "replay", c.start)
		writeSnapshot(c.w, rec, true)
		return false
	}
	if c.policy.Async && (claim.Outcome == store.Replayed || claim.Outcome == store.InFlight || claim.Outcome == store.Unresolved) {
		// A retry of an async request gets the same task, whatever its state.
		setKeyStatus(c.w, recordKeyStatus(rec))
		g.metrics.request(ctx, c.ep.Name, "async_accepted", c.start)
		writeAccepted(c.w, rec.OperationID, string(rec.State))
		return false
	}
	switch claim.Outcome {
	case store.Replayed:
		if c.ep.Replay.Reference() && c.shadow == nil && rec.Snapshot.ResourceID != "" &&
			rec.State == idempotency.Completed && !rec.Purged {
			g.replayReference(ctx, c, rec)
			return false
		}
		if rec.Compacted {
			g.replayExpired(c, rec)
			return false
		}
		rec, err := g.revealRecord(c.w, c.actor, rec)
		if err != nil {
			g.secretUnavailable(c, err)
			return false
		}
		g.metrics.request(ctx, c.ep.Name, "replay", c.start)
		writeSnapshot(c.w, rec, true)
	case store.Mismatch:
		// The operation exists: its id and state say which one the key
		// belongs to (GET /v1/operations/{id} shows it to the same actor).
		same := sameRequest(req, rec)
		g.refuse(c, "fingerprint_conflict", problem{Type: "fingerprint-mismatch",
			Title:  "Idempotency-Key reused with a different request",
			Detail: mismatchDetail(rec, req.FirstSent, same), Status: http.StatusUnprocessableEntity,
			OperationID: rec.OperationID.String(), OperationState: string(rec.State),
			NewKeySafe: !same || tookNoEffect(rec.State), ChangedMembers: g.changedMembers(c, rec)}) // members.go
	case store.InFlight:
		done, again, answered, leaseLeft := g.awaitRun(c, claim)
		if done != nil {
			return g.decide(ctx, c, req, store.Claim{Outcome: store.Replayed, Record: *done})
		}
		if again || answered {
			return again
		}
		g.refuseWait(c, "in_progress", problem{Type: "in-progress", Title: "operation in progress",
			Detail: "another request with this key is being processed", Status: http.StatusConflict,
			OperationID: rec.OperationID.String(), OperationState: string(rec.State)}, g.durations[c.ep.Name].retryAfter(leaseLeft))
	case store.Unresolved:
		if g.resolve(ctx, c, req.Token, rec) {
			return true
		}
		g.refuseWait(c, "outcome_unknown", problem{Type: "outcome-unknown", Title: "operation outcome unknown",
			Detail: "the upstream may have run it; it is being reconciled", Status: http.StatusConflict,
			OperationID: rec.OperationID.String(), OperationState: string(idempotency.OutcomeUnknown)}, time.Second)
	case store.WindowPassed:
		g.windowPassed(c, rec) // window.go
	case store.FirstRun, store.TakenOver:
		result := "first_run"
		if claim.Outcome == store.TakenOver {
			result = "takeover"
		}
		if c.policy.Async {
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
	in := Invocation{Request: c.r, Body: c.body, OperationID: rec.OperationID, Actor: c.actor, Endpoint: c.ep}
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
	if version == 0 {
		version = idempotency.FingerprintV2 // new records keep member digests (members.go)
	}
	req := idempotency.Request{Method: c.r.Method, Path: c.r.URL.Path,
		Query: c.r.URL.RawQuery, ContentType: c.r.Header.Get("Content-Type"), Body: c.body}
	if c.ep.DeclaredBody() == config.BodyMultipart && len(c.body) > 0 {
		canon, err := canonicalMultipart(req.ContentType, c.body)
		if err != nil {
			return idempotency.Fingerprint{}, err
		}
		req.ContentType, req.Body = multipartMediaType, canon
		// The body's cap was checked before reading; the form, a few
		// dozen bytes a part, may come out a little longer than a body of
		// many tiny parts.
		opts := c.policy.Fingerprint
		opts.MaxBytes = max(opts.MaxBytes, int64(len(canon)))
		return idempotency.ComputeFingerprintVersion(req, opts, version)
	}
	return idempotency.ComputeFingerprintVersion(req, c.policy.Fingerprint, version)
}

// storeDown answers 503: no claim was confirmed, so nothing was sent
// upstream. A claim whose commit the store could not confirm may exist;
// the store releases it once it answers again (docs/store.md), so a
// retry runs at once instead of waiting out its lease.
func (g *Gateway) storeDown(c *call, err error) {
	if errors.Is(err, store.ErrContention) {
		g.contended(c, err) // a busy key (409), not a dead store
		return
	}
	setKeyStatus(c.w, KeyStatusRejected)
	g.log.WarnContext(c.r.Context(), "store unavailable", "endpoint", c.ep.Name, "key", c.key, "err", err)
	g.refuseWait(c, "store_unavailable", problem{Type: "store-unavailable", Title: "idempotency store unavailable",
		Detail: "nothing was executed; retry with the same key", Status: http.StatusServiceUnavailable}, storeRetryAfter)
}

func (g *Gateway) refuse(c *call, result string, p problem) { g.refuseWait(c, result, p, 0) }

func (g *Gateway) refuseWait(c *call, result string, p problem, retryAfter time.Duration) {
	g.metrics.request(c.r.Context(), c.ep.Name, result, c.start)
	writeProblem(c.w, p, retryAfter)
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
