package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// HandlerExecutor runs intents in-process through a Go handler: the
// middleware mode. The handler sees the operation id and actor headers.
func HandlerExecutor(h http.Handler) Executor { return handlerExecutor{h} }

type handlerExecutor struct{ h http.Handler }

func (e handlerExecutor) Execute(ctx context.Context, in Invocation) (a Answer) {
	ctx, cancel := context.WithTimeout(ctx, in.Endpoint.UpstreamTimeout)
	defer cancel()
	r := in.Request.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(in.Body))
	r.ContentLength = int64(len(in.Body))
	setIdentity(r.Header, in)
	return e.run(r)
}

func (e handlerExecutor) Resolve(ctx context.Context, in Invocation) (Verdict, Answer) {
	if in.Endpoint.ResolvePath == "" {
		return Undetermined, Answer{}
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, resolvePath(in), nil)
	if err != nil {
		return Undetermined, Answer{Err: err}
	}
	setIdentity(r.Header, in)
	return verdict(e.run(r))
}

func (e handlerExecutor) Pass(w http.ResponseWriter, r *http.Request) { e.h.ServeHTTP(w, r) }

// run calls the handler; a panic is an unknown outcome (it may have
// written before panicking).
func (e handlerExecutor) run(r *http.Request) (a Answer) {
	rec := NewRecorder()
	defer func() {
		if v := recover(); v != nil {
			a = Answer{Err: fmt.Errorf("gateway: handler panicked: %v", v), Sent: true}
		}
	}()
	e.h.ServeHTTP(rec, r)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return Answer{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
}

// Recorder captures a handler's final response. Informational (1xx)
// responses other than 101 are not the answer: they are dropped (a 103
// Early Hints is only a hint) and the final status that follows is
// recorded. A status that is no final HTTP status (101, below 100, above
// 599) is recorded as it is and refused by checkStatus.
type Recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{header: http.Header{}} }

// Status is the recorded status (0 if nothing was written).
func (r *Recorder) Status() int { return r.status }

// Body is the recorded body.
func (r *Recorder) Body() []byte { return r.body.Bytes() }

// Header is the answer's header.
func (r *Recorder) Header() http.Header { return r.header }

// WriteHeader records the final status (see Recorder).
func (r *Recorder) WriteHeader(code int) {
	if r.status != 0 {
		return
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		return
	}
	r.status = code
}

// Write records body bytes (a 200 when no status came first).
func (r *Recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}
