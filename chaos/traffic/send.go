package traffic

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/client"
)

// Response headers the drill reads.
const (
	headerRegion      = "X-Idempotency-Region"
	headerReplayed    = "Idempotent-Replayed"
	headerOperationID = "X-Idempotency-Operation-Id"
)

// send makes one attempt of in against region and records it. It returns
// the recorded operation and the Retry-After the answer asked for.
func (w *worker) send(ctx context.Context, in *intent, region int, body []byte) (history.Operation, time.Duration) {
	var wrote atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	})
	rec := w.tr.rec
	op := history.Operation{Kind: history.KindRequest, ClientID: w.id, Actor: w.scope, Intent: in.n,
		Attempt: in.attempts, Endpoint: http.MethodPost + " " + w.tr.t.Path, Key: in.key, Reference: in.body.Reference,
		BodyHash: history.Hash(body), SentTo: w.tr.t.Regions[region].Name, Shard: w.shard, AckReplay: w.replaying}
	op.Call = rec.Now()
	resp, err := w.clients[region].Do(tctx, client.Intent{Method: http.MethodPost, Path: w.tr.t.Path, Key: in.key, Body: body,
		Header: in.header})
	op.Return = rec.Now()
	var retryAfter time.Duration
	if resp != nil {
		retryAfter = answered(&op, resp.Status, resp.Header, resp.Body)
	} else {
		op.Error = classify(err, wrote.Load())
		op.Detail = errText(err)
		op.Cut = ctx.Err() != nil // the drill ended it, not the cluster
	}
	op = rec.Add(op)
	w.tr.counts.observe(op)
	return op, retryAfter
}

// answered fills op from an answer and returns its Retry-After.
func answered(op *history.Operation, status int, h http.Header, body []byte) time.Duration {
	op.Status = status
	op.ServedBy = h.Get(headerRegion)
	op.Replayed = isTrue(h.Get(headerReplayed))
	op.OperationID = h.Get(headerOperationID)
	op.ResponseHash = history.Hash(body)
	op.ResourceID = resourceID(body, h)
	s, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || s < 0 {
		return 0
	}
	op.RetryAfter = max(s, 1) // "0" still says "retry": count it as present
	return time.Duration(s) * time.Second
}

// isTrue accepts the contract's "true" and the RFC 8941 boolean "?1".
func isTrue(v string) bool {
	v = strings.TrimSpace(v)
	return strings.EqualFold(v, "true") || v == "?1"
}

// classify names how an attempt without an answer failed. Only a request
// never written cannot have run.
func classify(err error, wrote bool) history.ErrorClass {
	var ne net.Error
	switch {
	case !wrote:
		return history.ErrBeforeSend
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return history.ErrTimeout
	}
	return history.ErrAfterSend
}

// errText keeps the error's last part: no URL, key or body is in it.
func errText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// resourceID reads the business resource an answer names: payment_id from
// a JSON body, else the last segment of Location.
func resourceID(body []byte, h http.Header) string {
	var b struct {
		PaymentID string `json:"payment_id"`
	}
	if json.Unmarshal(body, &b) == nil && b.PaymentID != "" {
		return b.PaymentID
	}
	if loc := h.Get("Location"); loc != "" {
		return loc[strings.LastIndex(loc, "/")+1:]
	}
	return ""
}
