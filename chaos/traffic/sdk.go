package traffic

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/client"
)

// sdkClient returns worker i's multi-region SDK client: every region, the
// SDK's own retries up to MaxAttempts, and a transport that records each
// attempt the SDK makes.
func (tr *Traffic) sdkClient(i int, token func(context.Context) (string, error)) (*client.Client, error) {
	rt := &recorder{tr: tr, regionOf: map[string]string{},
		base: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: client.DefaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second,
		}}
	var regions []client.Region
	for _, r := range tr.t.Regions {
		regions = append(regions, client.Region{Name: r.Name, URL: r.URL})
		if u, err := url.Parse(r.URL); err == nil {
			rt.regionOf[u.Host] = r.Name
		}
	}
	c, err := client.New(client.Config{Regions: regions, TokenSource: token, UpstreamTimeout: tr.t.UpstreamTimeout,
		HTTPClient: &http.Client{Timeout: tr.p.AttemptTimeout, Transport: rt,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		MaxAttempts: tr.p.MaxAttempts, BaseDelay: tr.p.RetryDelay, MaxDelay: max(maxRetryWait, tr.p.RetryDelay),
		Seed: tr.seed<<16 | uint64(i) + 1, Clock: tr.t.Clock})
	if err != nil {
		return nil, fmt.Errorf("traffic: sdk client: %w", err)
	}
	return c, nil
}

// doSDK makes one Do call of in with body and returns its last recorded
// attempt (a zero Operation if it made none: ctx ended first).
func (w *worker) doSDK(ctx context.Context, in *intent, body []byte) history.Operation {
	w.calls++
	call := &sdkCall{w: w, in: in, body: body, n: w.calls}
	w.sdk.Do(context.WithValue(ctx, sdkCallKey{}, call),
		client.Intent{Method: http.MethodPost, Path: w.tr.t.Path, Key: in.key, Body: body, Header: in.header})
	return call.last
}

// sdkCallKey carries an *sdkCall in a request's context to the recorder.
type sdkCallKey struct{}

// sdkCall is one Do call in progress: which intent, which body, and its
// last recorded attempt. Do makes its attempts one after another, on the
// worker's goroutine, so nothing here is shared.
type sdkCall struct {
	w    *worker
	in   *intent
	body []byte
	n    int64
	last history.Operation
}

// recorder is the SDK's transport: it records every attempt of an intent
// into the history as the direct mode's send does (the answer read in
// full, then handed to the SDK). Requests without an sdkCall (the SDK's
// /readyz probes) pass through unrecorded.
type recorder struct {
	tr       *Traffic
	base     http.RoundTripper
	regionOf map[string]string // host:port -> region name
}

// RoundTrip records one attempt.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	call, ok := req.Context().Value(sdkCallKey{}).(*sdkCall)
	if !ok || req.Header.Get("Idempotency-Key") == "" {
		return r.base.RoundTrip(req)
	}
	w, in := call.w, call.in
	in.attempts++
	var wrote atomic.Bool
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	}))
	rec := r.tr.rec
	op := history.Operation{Kind: history.KindRequest, ClientID: w.id, Actor: w.scope, Intent: in.n,
		Attempt: in.attempts, ClientCall: call.n, Endpoint: http.MethodPost + " " + r.tr.t.Path, Key: in.key,
		Reference: in.body.Reference, BodyHash: history.Hash(call.body), SentTo: r.regionOf[req.URL.Host],
		Shard: w.shard, AckReplay: w.replaying}
	op.Call = rec.Now()
	res, err := r.base.RoundTrip(req)
	var body []byte
	if err == nil {
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			wrote.Store(true) // an answer had begun: the request was written
		}
	}
	op.Return = rec.Now()
	if err == nil {
		answered(&op, res.StatusCode, res.Header, body)
		res.Body = io.NopCloser(bytes.NewReader(body))
		res.ContentLength = int64(len(body))
	} else {
		op.Error = classify(err, wrote.Load())
		op.Detail = errText(err)
		op.Cut = req.Context().Err() != nil // the drill ended the Do, not the cluster
	}
	op = rec.Add(op)
	r.tr.counts.observe(op)
	in.acked = in.acked || op.Acknowledged()
	in.final = op.Ends()
	call.last = op
	if err != nil {
		return nil, err
	}
	return res, nil
}
