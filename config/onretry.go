package config

// OnRetry says what a retry of an operation whose last attempt failed
// retryably does.
type OnRetry string

// OnRetry values.
const (
	// OnRetryReplay is the default and today's behaviour: the stored-status
	// policy decides (store_statuses, retry_statuses); a final answer is
	// replayed, and a retry of a RETRYABLE_FAILURE (or of an
	// OUTCOME_UNKNOWN its resolve path settled as not run, or as a
	// retryable answer) runs the intent again from the start, under the
	// same operation id.
	OnRetryReplay OnRetry = "replay"
	// OnRetryComplete resumes such a retry from the failed attempt's
	// recovery point instead: the last stage the upstream reported
	// (X-Idempotency-Stage, in 1xx answers or in the failed answer) is
	// kept, and the new attempt carries it as X-Idempotency-Resume-From,
	// so the upstream runs the rest of a partly done intent and the
	// client gets the new result. A terminal failure is still replayed.
	// Needs resolve_path (an unknown outcome is resolved first, as
	// always) and a synchronous endpoint.
	OnRetryComplete OnRetry = "complete"
)

// Completes reports whether retries resume from the recovery point.
func (e Endpoint) Completes() bool { return e.OnRetry == OnRetryComplete }

// checkOnRetry validates an endpoint's on_retry, reported under at.
func (e Endpoint) checkOnRetry(p *problems, at string) {
	at += ".on_retry"
	switch e.OnRetry {
	case "", OnRetryReplay:
	case OnRetryComplete:
		if e.ResolvePath == "" {
			p.add(at, "%q needs resolve_path: an attempt whose outcome is unknown must be resolved before the rest runs", OnRetryComplete)
		}
		if e.Async {
			p.add(at, "%q is for synchronous endpoints", OnRetryComplete)
		}
	default:
		p.add(at, "must be %q or %q, got %q", OnRetryReplay, OnRetryComplete, e.OnRetry)
	}
}
