package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strings"
)

// Errors returned by this package, checked with errors.Is.
var (
	// ErrInvalidConfig means New or Config.Validate refused a Config; the
	// wrapping error names the field.
	ErrInvalidConfig = errors.New("client: invalid config")
	// ErrInvalidIntent means Do refused an Intent before sending anything;
	// the wrapping error names the field.
	ErrInvalidIntent = errors.New("client: invalid intent")
	// ErrNoAnswerInTime means an attempt's request was written but no
	// answer's headers came within the response-header timeout
	// (Config.ResponseHeaderTimeout): the region may be paused or cut off
	// after reading it, so the attempt may have run. Do retries it under
	// the same key in the next region; a *GaveUpError wraps it when it
	// was the last attempt.
	ErrNoAnswerInTime = errors.New("client: no answer within the response-header timeout")
	// ErrFingerprintMismatch means the server answered 422: the key was
	// already used for a different request (method, path or body). Nothing
	// ran. The caller reused a key across intents; it must not retry this
	// request under this key.
	ErrFingerprintMismatch = errors.New("client: idempotency key already used for a different request")
	// ErrGaveUp means Do stopped without a final answer: the intent may or
	// may not have taken effect. Retry later with the same key to find out.
	ErrGaveUp = errors.New("client: gave up; the outcome is unknown")
	// ErrNotExecuted means Do stopped without a final answer and every
	// attempt provably executed nothing: each was refused by the gateway
	// before it claimed the key (the reject policy while the actor's
	// region is failed over, an ownership move, a rate limit), or never
	// left this process. The key is unused: retry later with it.
	ErrNotExecuted = errors.New("client: gave up; nothing was executed")
)

// problemTypeFingerprintMismatch is the last path segment of the problem
// type the gateway sends with its 422.
const problemTypeFingerprintMismatch = "fingerprint-mismatch"

// problemTypeDownstreamWindowPassed is the last path segment of the
// problem type of the gateway's final 409 to a retry that would send an
// attempt again past the endpoint's downstream_window: an operator must
// settle it, so retrying changes nothing.
const problemTypeDownstreamWindowPassed = "downstream-window-passed"

// problemTypeNotCancellable is the last path segment of the problem type
// of a cancel's final refusal (409).
const problemTypeNotCancellable = "not-cancellable"

// isProblemType reports whether the problem type typ is name, given whole
// or as the last path segment of a URI.
func isProblemType(typ, name string) bool {
	return typ == name || strings.HasSuffix(typ, "/"+name)
}

// ProblemError is a final answer other than 2xx or 3xx, parsed from an
// application/problem+json body (RFC 9457) when there is one. Do returns it
// next to the *Response it came from.
type ProblemError struct {
	// Type is the problem type URI, such as
	// "https://idemcoord.dev/problems/in-progress"; empty if the body was
	// not problem+json.
	Type string
	// Title is the problem's summary, or the status text if the body was
	// not problem+json.
	Title string
	// Status is the HTTP status of the response.
	Status int
	// Detail explains this occurrence; may be empty.
	Detail string
	// OperationID names the server's operation for this key, from the
	// body or else the X-Idempotency-Operation-Id header; may be empty.
	OperationID string
	// OperationState is the operation's state on the server, such as
	// IN_PROGRESS or OUTCOME_UNKNOWN; may be empty.
	OperationState string
	// ChangedMembers names what of the body differs from the request the
	// key was first used with (a fingerprint-mismatch 422): RFC 6901
	// pointers, form part names or "body", never values; nil when the
	// server did not say.
	ChangedMembers []string
	// NewKeySafe reports that the server said nothing ran under this key,
	// so the caller may start the intent again under a new key without
	// risking a double effect. It is false whenever the server did not say
	// so, including every answer that was not problem+json.
	NewKeySafe bool
	// Body is the raw response body. Error does not include it: bodies may
	// carry personal data and error text ends up in logs.
	Body []byte

	// fromOperation is set when the answer names an operation in its
	// headers (a first run or a replay): the 422 then came from the
	// upstream, not from the gateway's fingerprint check.
	fromOperation bool
}

// Error returns the status, title and detail, never the body.
func (p *ProblemError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "client: %d %s", p.Status, p.Title)
	if p.Detail != "" {
		sb.WriteString(": " + p.Detail)
	}
	if p.OperationState != "" {
		sb.WriteString(" (operation " + p.OperationState + ")")
	}
	return sb.String()
}

// Is reports whether p is the gateway's fingerprint mismatch when target is
// ErrFingerprintMismatch. That is a 422 whose problem type ends in
// "fingerprint-mismatch", or, when the body is not problem+json, a 422 that
// names no operation (an upstream's own 422 arrives as a first run or a
// replay, which do).
func (p *ProblemError) Is(target error) bool {
	if target != ErrFingerprintMismatch || p.Status != http.StatusUnprocessableEntity {
		return false
	}
	if p.Type != "" {
		return isProblemType(p.Type, problemTypeFingerprintMismatch)
	}
	return !p.fromOperation
}

// newProblem builds the ProblemError for a final non-2xx/3xx response.
func newProblem(r *Response) *ProblemError {
	p := &ProblemError{
		Status:        r.Status,
		OperationID:   r.OperationID,
		Body:          r.Body,
		fromOperation: r.Replayed || r.OperationID != "",
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == "application/problem+json" {
		var doc struct {
			Type           string   `json:"type"`
			Title          string   `json:"title"`
			Detail         string   `json:"detail"`
			OperationID    string   `json:"operation_id"`
			OperationState string   `json:"operation_state"`
			NewKeySafe     bool     `json:"new_key_safe"`
			ChangedMembers []string `json:"changed_members"`
		}
		// A body that does not parse leaves the fallbacks below; the raw
		// bytes stay in Body. The body's own "status" is advisory (RFC
		// 9457 section 3.1.2): the HTTP status wins.
		if json.Unmarshal(r.Body, &doc) == nil {
			p.Type, p.Title, p.Detail = doc.Type, doc.Title, doc.Detail
			p.OperationState, p.NewKeySafe, p.ChangedMembers = doc.OperationState, doc.NewKeySafe, doc.ChangedMembers
			if doc.OperationID != "" {
				p.OperationID = doc.OperationID
			}
		}
	}
	if p.Title == "" {
		p.Title = http.StatusText(r.Status)
	}
	return p
}

// GaveUpError is returned when Do stops without a final answer: it used up
// MaxAttempts on retryable failures, or the context ended while it was
// retrying. The intent may or may not have taken effect, so this is the
// package's "outcome unknown": retry later with the same key, and do not
// start the intent under a new key. It matches ErrGaveUp with errors.Is,
// and its Err (the last failure) with errors.Is and errors.As, so a final
// 409 or 503 is still a *ProblemError and a context end is still
// context.Canceled or context.DeadlineExceeded.
type GaveUpError struct {
	// Attempts is how many attempts were made.
	Attempts int
	// Err is the last failure: a *ProblemError, a transport error, or the
	// context's error joined with the last failure.
	Err error
}

// Error says how many attempts were made and why the last one failed.
func (e *GaveUpError) Error() string {
	noun := "attempts"
	if e.Attempts == 1 {
		noun = "attempt"
	}
	return fmt.Sprintf("client: gave up after %d %s, outcome unknown: %v", e.Attempts, noun, e.Err)
}

// Unwrap returns the last failure.
func (e *GaveUpError) Unwrap() error { return e.Err }

// Is reports whether target is ErrGaveUp.
func (e *GaveUpError) Is(target error) bool { return target == ErrGaveUp }

// NotExecutedError is returned instead of a *GaveUpError when Do stops
// without a final answer and the answers prove that no attempt executed
// the intent: the gateway refused each one before claiming the key (a
// 503 or 429 problem document naming no operation), or the attempt was
// never sent. Retrying later with the same key is safe, and nothing needs
// reconciling. It matches ErrNotExecuted with errors.Is, and its Err (the
// last failure) with errors.Is and errors.As.
type NotExecutedError struct {
	// Attempts is how many attempts were made.
	Attempts int
	// Err is the last failure: a *ProblemError, a transport error, or the
	// context's error joined with the last failure.
	Err error
}

// Error says how many attempts were made, that none executed the intent,
// and why the last one failed.
func (e *NotExecutedError) Error() string {
	noun := "attempts"
	if e.Attempts == 1 {
		noun = "attempt"
	}
	return fmt.Sprintf("client: gave up after %d %s, nothing was executed: %v", e.Attempts, noun, e.Err)
}

// Unwrap returns the last failure.
func (e *NotExecutedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrNotExecuted.
func (e *NotExecutedError) Is(target error) bool { return target == ErrNotExecuted }

// provedUnrun reports an answer that proves its attempt executed nothing:
// the gateway's own refusal before it claimed the key, a 503 or 429
// problem document that names no operation. A 503 that is not a problem
// document (a proxy with no backend) proves nothing.
func provedUnrun(r *Response) bool {
	if r.Replayed || r.OperationID != "" ||
		(r.Status != http.StatusServiceUnavailable && r.Status != http.StatusTooManyRequests) {
		return false
	}
	p := newProblem(r)
	return p.Type != "" && p.OperationID == "" && p.OperationState == ""
}

// mayHaveRunBy reports a retryable answer that leaves open whether the
// intent ran: a 409, a 5xx or an answer naming an operation, unless the
// gateway's refusal proves its attempt executed nothing.
func mayHaveRunBy(r *Response) bool {
	if provedUnrun(r) {
		return false
	}
	p := newProblem(r)
	return r.Status == http.StatusConflict || r.Status >= 500 || r.OperationID != "" ||
		p.OperationID != "" || p.OperationState != ""
}

// gaveUp is the error of a Do that stopped without a final answer: a
// *NotExecutedError when the intent is keyed and no attempt may have run
// it, else a *GaveUpError (the outcome is unknown).
func gaveUp(ambiguous, mayHaveRun bool, attempts int, err error) error {
	if ambiguous && !mayHaveRun {
		return &NotExecutedError{Attempts: attempts, Err: err}
	}
	return &GaveUpError{Attempts: attempts, Err: err}
}
