// Package exchange is the leaf every stage of the gateway shares: the
// per-request value (Request) and the answer vocabulary (problem
// documents, the key-status header writer, refusals with Retry-After, the
// store-down and contention answers, the retention header). It imports no
// other part of the gateway, so every stage can import it.
package exchange

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/idempotency"
)

// Headers the answer vocabulary writes (package gateway re-exports them).
const (
	// HeaderKey is the request header that carries the idempotency key.
	HeaderKey = "Idempotency-Key"
	// HeaderOperationID names the operation an answer belongs to.
	HeaderOperationID = "X-Idempotency-Operation-Id"
	// HeaderActor tells the upstream whom the gateway authenticated.
	HeaderActor = "X-Idempotency-Actor"
	// HeaderReplayed marks an answer replayed from the key's record.
	HeaderReplayed = "Idempotent-Replayed"
)

// Outcomes is where a request's answer is counted and where its refusals
// are logged: one per gateway, shared by all its requests.
type Outcomes struct {
	// Log receives the answers' warnings.
	Log *slog.Logger
	// Count counts one answer of endpoint with result, started at start.
	Count func(ctx context.Context, endpoint, result string, start time.Time)
	// StoreDown, if set, is told of each request refused because the
	// store is unavailable (Request.StoreDown): the incident ledger's
	// store outage notes (ledger.NoteStoreDown).
	StoreDown func(actor, endpoint string, key idempotency.Key)
}

// Request is one coordinated request as it moves through the stages.
// Admission fills in what it establishes (Key, Body); the pipeline the
// rest.
type Request struct {
	// W is where the answer goes (a key-status writer, or a shadow
	// run's recorder).
	W http.ResponseWriter
	// R is the client's request.
	R *http.Request
	// Endpoint is the configured endpoint the request is for.
	Endpoint *config.Endpoint
	// Policy is the endpoint's idempotency policy.
	Policy idempotency.Policy
	// Actor is the authenticated caller the key is scoped to.
	Actor string
	// Key is the parsed Idempotency-Key (set by admission).
	Key idempotency.Key
	// Body is the request body as read within its cap (set by admission).
	Body []byte
	// Start is when the gateway received the request.
	Start time.Time
	// ClaimedAt is when the last claim was sent to the store, by the
	// gateway's clock: the lease it won runs from no earlier than this.
	ClaimedAt time.Time
	// Charged is set once the request took its token of the endpoint's
	// per-actor limit.
	Charged bool
	// Outcomes counts and logs the answers.
	Outcomes *Outcomes
	// Shadow is set on a shadow-mode endpoint (see Shadow).
	Shadow *Shadow
}

// Refuse answers p (no Retry-After) and counts it as result.
func (q *Request) Refuse(result string, p Problem) { q.RefuseWait(result, p, 0) }

// RefuseWait answers p with Retry-After retryAfter (none when zero) and
// counts it as result.
func (q *Request) RefuseWait(result string, p Problem, retryAfter time.Duration) {
	q.Outcomes.Count(q.R.Context(), q.Endpoint.Name, result, q.Start)
	WriteProblem(q.W, p, retryAfter)
}
