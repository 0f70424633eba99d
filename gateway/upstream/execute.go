package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
)

// maxUpstreamBody bounds what is read of an upstream answer (the stored
// snapshot has its own, smaller, per-endpoint cap).
const maxUpstreamBody = 32 << 20

// Invocation is one execution of an intent.
type Invocation struct {
	// Request is the client's request; its body has been read into Body.
	Request *http.Request
	// Body is the request body, sent unchanged.
	Body []byte
	// OperationID is stable across retries and takeovers.
	OperationID uuid.UUID
	// Actor is the caller's actor scope.
	Actor string
	// Endpoint is the matched endpoint.
	Endpoint *config.Endpoint
	// Stage, if set, is called with each stage the upstream reports while
	// it runs the intent (an informational 1xx answer carrying
	// HeaderStage), in order, before the final answer arrives.
	Stage func(idempotency.Stage)
	// ResumeFrom, if set, is sent as HeaderResumeFrom: the recovery point
	// this attempt resumes from (on_retry: complete).
	ResumeFrom string
	// opID, if set, is OperationID as text, made once for the request's
	// headers and its answer.
	opID string
}

// OperationIDText is OperationID as text.
func (in Invocation) OperationIDText() string {
	if in.opID != "" {
		return in.opID
	}
	return in.OperationID.String()
}

// Answer is what an execution produced.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
	// Err is set when no complete answer came back.
	Err error
	// Sent reports, when Err is set, whether the request may have reached
	// the upstream: if so the outcome is unknown, if not it is retryable.
	// The proxy sets it once the request's head was written (httptrace
	// WroteHeaders), whatever the error.
	Sent bool
}

// Verdict is the upstream's answer to "did operation X run?".
type Verdict int

// Verdicts.
const (
	// Undetermined: no answer (unreachable, still pending, no resolve path).
	Undetermined Verdict = iota
	// Ran: it ran; the answer carries its response.
	Ran
	// NotRun: it provably did not run and will not.
	NotRun
)

// Executor runs intents: a proxy to an upstream, or a wrapped handler.
type Executor interface {
	// Execute runs the intent once.
	Execute(ctx context.Context, in Invocation) Answer
	// Resolve asks whether the operation ran (endpoint's resolve_path).
	Resolve(ctx context.Context, in Invocation) (Verdict, Answer)
	// Pass forwards an uncoordinated request.
	Pass(w http.ResponseWriter, r *http.Request)
}

// Proxy executes intents against an upstream HTTP API.
type Proxy struct {
	upstream  *url.URL
	transport http.RoundTripper
	rp        *httputil.ReverseProxy
}

var _ Executor = (*Proxy)(nil)

// NewProxy returns an Executor for the upstream base URL. transport may be
// nil for http.DefaultTransport's settings. A transport passed in must
// not resend a request on its own (an *http.Transport does not: Execute
// gives it a body it cannot rewind).
func NewProxy(upstream *url.URL, transport http.RoundTripper) *Proxy {
	if transport == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 256
		transport = t
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.Out.Header[exchange.HeaderActor] = pr.In.Header[exchange.HeaderActor]
		},
		Transport: transport,
	}
	return &Proxy{upstream: upstream, transport: transport, rp: rp}
}

// Execute sends the request upstream with the operation id and actor,
// within the endpoint's upstream timeout. The call is detached from the
// client's connection: a client that hangs up does not cut the upstream
// call short (that would make the outcome unknown for nothing).
func (p *Proxy) Execute(ctx context.Context, in Invocation) Answer {
	ctx, cancel := context.WithTimeout(detach(ctx), in.Endpoint.UpstreamTimeout)
	defer cancel()
	ctx, sent := traceSend(ctx, in.Stage)
	req, err := http.NewRequestWithContext(ctx, in.Request.Method, "", nil)
	if err != nil {
		return Answer{Err: err}
	}
	// The URL is built, not printed and parsed again (in the one the
	// request parsed from ""): the joined path is escaped anew on the wire
	// (no RawPath), and the host loses an empty port, as http.NewRequest
	// would.
	u := req.URL
	*u = *p.upstream
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/")+in.Request.URL.Path, ""
	u.RawQuery = in.Request.URL.RawQuery
	u.Host = strings.TrimSuffix(u.Host, ":")
	req.Host = u.Host
	// A body without GetBody, never http.NoBody: http.Transport treats a
	// request carrying Idempotency-Key as safe to send again on a new
	// connection when a reused one dies before the answer (after the
	// upstream may have acted on it), unless it cannot rewind the body.
	// An empty body therefore goes out as an empty chunked body.
	req.Body = io.NopCloser(bytes.NewReader(in.Body))
	req.ContentLength = int64(len(in.Body))
	req.GetBody = nil
	req.Header = exchange.OutboundHeader(in.Request.Header, 3)
	setIdentity(req.Header, in)
	return p.do(req, sent)
}

// Resolve asks the upstream's resolve path about the operation.
func (p *Proxy) Resolve(ctx context.Context, in Invocation) (Verdict, Answer) {
	if in.Endpoint.ResolvePath == "" {
		return Undetermined, Answer{}
	}
	ctx, cancel := context.WithTimeout(exchange.Detach(ctx), in.Endpoint.UpstreamTimeout)
	defer cancel()
	u := *p.upstream
	u.Path = strings.TrimSuffix(u.Path, "/") + resolvePath(in)
	ctx, sent := traceSend(ctx, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Undetermined, Answer{Err: err}
	}
	setIdentity(req.Header, in)
	return verdict(p.do(req, sent))
}

// Pass proxies an uncoordinated request.
func (p *Proxy) Pass(w http.ResponseWriter, r *http.Request) { p.rp.ServeHTTP(w, r) }

// do sends req once, made with traceSend's context and sent. Whether a
// failed request was sent is decided from what the transport wrote, not
// from the error: once the request's head is written (httptrace
// WroteHeaders) the upstream may act on it, and the outcome is unknown.
// Before that no complete request can have reached it (a server cannot act
// on a head it has not received whole).
func (p *Proxy) do(req *http.Request, sent *sendTrace) Answer {
	resp, err := roundTrip(p.transport, req)
	if err != nil {
		return Answer{Err: err, Sent: sent.wrote.Load()}
	}
	defer resp.Body.Close()
	body, err := exchange.ReadAtMost(resp.Body, resp.ContentLength, maxUpstreamBody+1)
	if err != nil {
		return Answer{Err: err, Sent: true}
	}
	if len(body) > maxUpstreamBody {
		// Never record or relay a cut answer as if it were whole; the
		// upstream acted, so the outcome is for the resolve path to tell.
		return Answer{Err: fmt.Errorf("gateway: upstream answer over %d bytes", maxUpstreamBody), Sent: true}
	}
	exchange.DropHopHeaders(resp.Header)
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

func setIdentity(h http.Header, in Invocation) {
	h.Set(exchange.HeaderOperationID, in.OperationIDText())
	h.Set(exchange.HeaderActor, in.Actor)
	if in.ResumeFrom != "" {
		h.Set(HeaderResumeFrom, in.ResumeFrom)
	}
}

func resolvePath(in Invocation) string {
	return strings.ReplaceAll(in.Endpoint.ResolvePath, config.OperationIDParam, in.OperationID.String())
}

// resolution is the resolve endpoint's 200 body.
type resolution struct {
	Status  int             `json:"status"`
	Headers http.Header     `json:"headers"`
	Body    json.RawMessage `json:"body"`
}

// verdict reads a resolve answer: 200 with the original response, 404 for
// "never ran", anything else undetermined (an original status that is not
// a final HTTP status, 200-599, too).
func verdict(a Answer) (Verdict, Answer) {
	switch {
	case a.Err != nil:
		return Undetermined, a
	case a.Status == http.StatusNotFound:
		return NotRun, a
	case a.Status != http.StatusOK:
		return Undetermined, a
	}
	var res resolution
	if err := json.Unmarshal(a.Body, &res); err != nil || res.Status < 200 || res.Status > 599 {
		return Undetermined, Answer{Err: fmt.Errorf("gateway: malformed resolve answer: %v", err)}
	}
	return Ran, Answer{Status: res.Status, Header: res.Headers, Body: res.Body}
}
