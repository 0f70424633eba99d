package exchange

import "errors"

// ClientError is an error about what a client sent that states itself for
// the client: ClientReason is a problem's detail, written where the check
// failed, naming no package of this server (idempotency.RequestError, the
// gateway's Invalid). It is the only way a lower layer's error reaches a
// client: Reason maps an error to a detail through it, and no detail is
// made from an error's Error text.
type ClientError interface {
	error
	ClientReason() string
}

// Reason is the detail a client is told for err: the ClientReason of the
// first ClientError in its chain, else fallback (an error that is not the
// client's, such as a store's, says nothing to a client).
func Reason(err error, fallback string) string {
	if ce, ok := errors.AsType[ClientError](err); ok {
		return ce.ClientReason()
	}
	return fallback
}

// Invalid is a ClientError of the gateway's own checks: Reason is what
// the client is told, and Error is the same under the gateway's name.
type Invalid struct {
	// Reason is what a client may be told.
	Reason string
	// kind is the Invalid this one refines, cause what the check met.
	kind  *Invalid
	cause error
}

// NewInvalid returns an Invalid stating reason.
func NewInvalid(reason string) *Invalid { return &Invalid{Reason: reason} }

// Error is the reason under the gateway's name, for logs.
func (e *Invalid) Error() string { return "gateway: " + e.Reason }

// ClientReason is what the client is told.
func (e *Invalid) ClientReason() string { return e.Reason }

// Unwrap returns the Invalid e refines and its cause.
func (e *Invalid) Unwrap() []error {
	var errs []error
	if e.kind != nil {
		errs = append(errs, e.kind)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// Refine returns e with its reason continued by more (after ": "), for
// a client, with cause (may be nil) as what the check met. more is the
// checker's own words: never a cause's Error text.
func (e *Invalid) Refine(more string, cause error) *Invalid {
	return &Invalid{Reason: e.Reason + ": " + more, kind: e, cause: cause}
}
