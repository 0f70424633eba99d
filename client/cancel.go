package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// Cancel asks the gateway to cancel the async operation operationID
// (DELETE /v1/operations/{id}, as the owning actor: the client's token).
// Cancelling is itself idempotent, so Cancel retries what may change on
// another try — transport failures, 429, 502 (the upstream gave no
// verdict), 503 and 504, never sooner than Retry-After — up to
// MaxAttempts, and needs no key.
//
//   - 200: the operation is cancelled (now or earlier; Replayed says
//     which); its effect never happened and a retry of the original
//     request replays the cancellation. The *Response and a nil error.
//   - 409 not-cancellable: the operation reached an irreversible stage or
//     finished; it runs to its end once. 404: no such operation of this
//     actor. Any other final status: the *Response and a *ProblemError.
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
	target, header, err := c.prepare(in, false) // a cancel is idempotent by itself
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, &GaveUpError{Attempts: attempt - 1, Err: err}
		}
		token, err := c.token(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := c.send(ctx, target, in, header, token, attempt)
		if err == nil {
			return resp, nil
		}
		var retryAfter time.Duration
		switch {
		case resp != nil && (resp.Status == http.StatusConflict || !retryableStatus(resp)):
			return resp, err // a refusal (409) or another final answer
		case resp != nil:
			retryAfter, _ = parseRetryAfter(resp.Header.Get("Retry-After"), c.cfg.Clock.Now())
		case ctx.Err() != nil:
			return nil, &GaveUpError{Attempts: attempt, Err: err}
		case !retryableTransport(err):
			return nil, err
		}
		if attempt >= c.cfg.MaxAttempts {
			return resp, &GaveUpError{Attempts: attempt, Err: err}
		}
		wait := c.wait(attempt, retryAfter)
		c.logRetry(ctx, attempt, resp, err, wait)
		if serr := clock.Sleep(ctx, c.cfg.Clock, wait); serr != nil {
			return resp, &GaveUpError{Attempts: attempt, Err: fmt.Errorf("%w while waiting to retry; last attempt: %w", serr, err)}
		}
	}
}
