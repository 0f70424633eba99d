package idempotency

import "fmt"

// RequestError is an error in what a client sent: its key (ParseKeyHeader)
// or its body (ComputeFingerprint). Reason says what is wrong in words a
// client may be told, written where the check failed, with no package
// name and never quoting the key or the body; Error adds the package's
// name for logs. The gateway tells a client an error's ClientReason and
// never its Error text.
type RequestError struct {
	// Reason is what a client may be told.
	Reason string
	// kind is the exported error this one refines (ErrKeyMalformed...),
	// nil for those themselves; cause is an underlying error, if any.
	kind  *RequestError
	cause error
}

// Error is the reason under the package's name.
func (e *RequestError) Error() string { return "idempotency: " + e.Reason }

// ClientReason is what a client may be told (gateway/exchange.ClientError).
func (e *RequestError) ClientReason() string { return e.Reason }

// Unwrap returns the error e refines and its cause, so that errors.Is
// matches ErrKeyMalformed and the like.
func (e *RequestError) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// refine returns e with the reason continued by format, for a client.
func (e *RequestError) refine(format string, args ...any) *RequestError {
	return &RequestError{Reason: e.Reason + ": " + fmt.Sprintf(format, args...), kind: e}
}

// because returns e refined by format with cause as its underlying error.
// The reason states cause's own text: cause is this package's own check
// (a number out of its limits), whose text names no package.
func (e *RequestError) because(cause error, format string, args ...any) *RequestError {
	r := e.refine(format, args...)
	r.cause = cause
	return r
}
