package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Cancel asks the gateway to cancel the async operation operationID
// (DELETE /v1/operations/{id}, as the owning actor: the client's token).
// Cancelling is itself idempotent, so Cancel retries what may change on
// another try — transport failures, 429, 502 (the upstream gave no
// verdict), a 409 other than not-cancellable, 503 and 504, never sooner than Retry-After — up to
// MaxAttempts, and needs no key.
//
//   - 200: the operation is cancelled (now or earlier; Replayed says
//     which); its effect never happened and a retry of the original
//     request replays the cancellation. The *Response and a nil error.
//   - 409 not-cancellable: the operation reached an irreversible stage or
//     finished; it runs to its end once. It is the only final 409: any
//     other (cancel-undetermined: the record is being updated) is asked
//     again like a 502. 404: no such operation of this actor. Any other
//     final status: the *Response and a *ProblemError.
//   - no final answer: a *GaveUpError; the operation may or may not be
//     cancelled, and Cancel may be called again.
//
// Dropping a request, including the original POST, never cancels
// anything: only Cancel does.
func (c *Client) Cancel(ctx context.Context, operationID string) (*Response, error) {
	if operationID == "" {
		return nil, fmt.Errorf("%w: operation id is empty", ErrInvalidIntent)
	}
	in := Intent{Method: http.MethodDelete, Path: "/v1/operations/" + url.PathEscape(operationID)}
	return c.retry(ctx, in, false, retryableCancel, false)
}

// retryableCancel reports whether a cancel's answer may change on
// another try: as retryableStatus, except that a 409 is final only when it
// is the refusal not-cancellable (the operation passed its irreversible
// stage, or cannot be cancelled at all). Any other 409, such as the
// gateway's cancel-undetermined ("the record is being updated; retry the
// DELETE"), asks for the DELETE again.
func retryableCancel(r *Response) bool {
	if r.Status == http.StatusConflict && !r.Replayed {
		return !isProblemType(newProblem(r).Type, problemTypeNotCancellable)
	}
	return retryableStatus(r)
}
