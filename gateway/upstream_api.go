package gateway

import (
	"net/http"
	"net/url"

	"github.com/idemcoord/idemcoord/gateway/upstream"
)

// The executor vocabulary lives in the upstream stage (gateway/upstream);
// these are its names as the gateway's API has always given them.

// Invocation is one execution of an intent (upstream.Invocation).
type Invocation = upstream.Invocation

// Answer is what an execution produced (upstream.Answer).
type Answer = upstream.Answer

// Verdict is the upstream's answer to "did operation X run?"
// (upstream.Verdict).
type Verdict = upstream.Verdict

// Verdicts.
const (
	// Undetermined: no answer (unreachable, still pending, no resolve path).
	Undetermined = upstream.Undetermined
	// Ran: it ran; the answer carries its response.
	Ran = upstream.Ran
	// NotRun: it provably did not run and will not.
	NotRun = upstream.NotRun
)

// Executor runs intents: a proxy to an upstream, or a wrapped handler
// (upstream.Executor).
type Executor = upstream.Executor

// Proxy executes intents against an upstream HTTP API (upstream.Proxy).
type Proxy = upstream.Proxy

// NewProxy returns an Executor for the upstream base URL; transport may
// be nil (upstream.NewProxy).
func NewProxy(u *url.URL, transport http.RoundTripper) *Proxy { return upstream.NewProxy(u, transport) }

// HandlerExecutor runs intents in-process through a Go handler: the
// middleware mode (upstream.HandlerExecutor).
func HandlerExecutor(h http.Handler) Executor { return upstream.HandlerExecutor(h) }

// HeaderStage is how an upstream reports the stage an operation is in
// (upstream.HeaderStage).
const HeaderStage = upstream.HeaderStage

// HeaderResumeFrom tells the upstream the recovery point a retried
// attempt resumes from (upstream.HeaderResumeFrom).
const HeaderResumeFrom = upstream.HeaderResumeFrom

// CancelVerdict is the upstream's answer to "cancel operation X"
// (upstream.CancelVerdict).
type CancelVerdict = upstream.CancelVerdict

// Cancel verdicts.
const (
	// CancelUndetermined: no usable answer; nothing is recorded.
	CancelUndetermined = upstream.CancelUndetermined
	// CancelConfirmed: the upstream promises the operation never takes
	// effect.
	CancelConfirmed = upstream.CancelConfirmed
	// CancelRefused: the operation reached a stage it cannot be undone
	// from.
	CancelRefused = upstream.CancelRefused
)

// Canceller asks the upstream to cancel an operation (upstream.Canceller).
type Canceller = upstream.Canceller
