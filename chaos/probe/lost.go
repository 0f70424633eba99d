package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
)

// ClientID is the history's client id of the drill's own requests: above
// any traffic worker's, so their intents never mix with the workload's.
const ClientID = 1 << 20

// ErrAnswered is returned by LostAnswer when the answer came back before
// the connection was dropped: nothing ambiguous was provoked (the intent
// is recorded and ended all the same).
var ErrAnswered = errors.New("probe: the answer arrived before the connection was dropped")

// lostAnswerWait caps the wait between the lost-answer probe's retries.
const lostAnswerWait = 2 * time.Second

// Gateway is one region's gateway, as the lost-answer probe calls it.
type Gateway struct {
	// Name is the region's name; Client sends to its gateway with one
	// attempt per call (client.Config.MaxAttempts 1).
	Name   string
	Client *client.Client
}

// Intent is the request the lost-answer probe sends, with what the
// history needs to join it to the ledger.
type Intent struct {
	// Actor is the actor scope the gateways' token names; Shard its shard.
	Actor string
	Shard int
	// N numbers the probe's intent (the history's Intent, >= 1).
	N int64
	// Path is the endpoint's path; Key the Idempotency-Key; Body the
	// request body; Reference the business reference the body carries.
	Path, Key, Reference string
	Body                 []byte
	// FirstSent is the Idempotency-First-Sent every attempt carries: the
	// time of the intent's first attempt. LostAnswer and Resolve stamp it
	// when it is empty, so a retry a second later is not taken for
	// another intent (422).
	FirstSent string
}

// stamped returns in with FirstSent set to now if it was empty.
func (in Intent) stamped() Intent {
	if in.FirstSent == "" {
		in.FirstSent = time.Now().UTC().Format(http.TimeFormat)
	}
	return in
}

// LostAnswer provokes an ambiguous outcome and resolves it, as a client
// whose connection broke would: it sends in through gws[0] and drops the
// connection the moment the request was written, so the gateway has the
// whole request but the client never learns what became of it (recorded
// as history.ErrAfterSend). It then retries the same key and body until
// an answer ends the intent (Resolve). It returns the last recorded
// attempt; ErrAnswered when the first answer came back after all (no
// ambiguity provoked).
func LostAnswer(ctx context.Context, rec *history.Recorder, gws []Gateway, in Intent) (history.Operation, error) {
	if len(gws) == 0 {
		return history.Operation{}, errors.New("probe: lost answer: no gateway")
	}
	in = in.stamped()
	first := send(ctx, rec, gws[0], in, 1, true)
	last, err := Resolve(ctx, rec, gws, in, first)
	if !first.Ambiguous() {
		return last, fmt.Errorf("%w (status %d %s)", ErrAnswered, first.Status, first.Error)
	}
	return last, err
}

// Resolve retries in after the attempt prev (the zero Operation: none
// yet), the same key and body, each attempt through the next gateway,
// waiting as a Retry-After asks (at most 2 s), until an answer ends the
// intent (history.Operation.Ends) or ctx ends. It returns the last
// recorded attempt, and an error when none ended the intent.
func Resolve(ctx context.Context, rec *history.Recorder, gws []Gateway, in Intent, prev history.Operation) (history.Operation, error) {
	if len(gws) == 0 {
		return history.Operation{}, errors.New("probe: resolve: no gateway")
	}
	in = in.stamped()
	last := prev
	for attempt := prev.Attempt + 1; (attempt == 1 || !last.Ends()) && ctx.Err() == nil; attempt++ {
		if attempt > 1 {
			wait := 200 * time.Millisecond
			if last.RetryAfter > 0 {
				wait = min(time.Duration(last.RetryAfter)*time.Second, lostAnswerWait)
			}
			if clock.Sleep(ctx, clock.Real(), wait) != nil {
				break
			}
		}
		last = send(ctx, rec, gws[(attempt-1)%len(gws)], in, attempt, false)
	}
	if !last.Ends() {
		return last, fmt.Errorf("probe: intent not resolved: last attempt status %d %s: %v", last.Status, last.Error, ctx.Err())
	}
	return last, nil
}

// send makes one attempt of in through gw and records it; drop cuts the
// connection as soon as the request was written.
func send(ctx context.Context, rec *history.Recorder, gw Gateway, in Intent, attempt int, drop bool) history.Operation {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wrote atomic.Bool
	actx = httptrace.WithClientTrace(actx, &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		wrote.Store(info.Err == nil)
		if drop && info.Err == nil {
			cancel()
		}
	}})
	// Every attempt of one intent is one client-level call (ClientCall:
	// the intent's number), as the SDK's Do with its retries: the report's
	// availability counts what the resolve loop got, not each attempt of a
	// one-attempt client (a probe's attempt to the region a crash point
	// killed counted as an unanswered call of an unaffected actor, though
	// its retry was answered 0.2 s later).
	op := history.Operation{Kind: history.KindRequest, ClientID: ClientID, ClientCall: in.N, Actor: in.Actor, Intent: in.N, Attempt: attempt,
		Endpoint: http.MethodPost + " " + in.Path, Key: in.Key, Reference: in.Reference, BodyHash: history.Hash(in.Body),
		SentTo: gw.Name, Shard: in.Shard, Call: rec.Now()}
	resp, err := gw.Client.Do(actx, client.Intent{Method: http.MethodPost, Path: in.Path, Key: in.Key, Body: in.Body,
		Header: http.Header{client.HeaderFirstSent: {in.FirstSent}}})
	op.Return = rec.Now()
	switch {
	case resp != nil:
		op.Status, op.ServedBy, op.Replayed = resp.Status, resp.Header.Get("X-Idempotency-Region"), resp.Replayed
		op.OperationID, op.ResponseHash, op.ResourceID = resp.OperationID, history.Hash(resp.Body), resourceID(resp)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			op.RetryAfter = max(s, 1)
		}
	case !wrote.Load():
		op.Error = history.ErrBeforeSend
	case errors.Is(err, context.DeadlineExceeded):
		op.Error = history.ErrTimeout
	default:
		op.Error = history.ErrAfterSend
		if drop {
			op.Detail = "connection dropped by the probe once the request was written"
		}
	}
	return rec.Add(op)
}

// resourceID reads the business resource an answer names: payment_id from
// a JSON body, else the last segment of Location.
func resourceID(resp *client.Response) string {
	var b struct {
		PaymentID string `json:"payment_id"`
	}
	if json.Unmarshal(resp.Body, &b) == nil && b.PaymentID != "" {
		return b.PaymentID
	}
	if loc := resp.Header.Get("Location"); loc != "" {
		return loc[strings.LastIndex(loc, "/")+1:]
	}
	return ""
}
