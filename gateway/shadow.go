package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// shadowRun is what a shadow-mode request learnt from the protocol.
type shadowRun struct {
	rec recorder
	// relay is set when the recorded answer is one the client gets as it
	// is: the upstream's own (the protocol executed the request), a
	// redirect to the owner region, or a forward whose answer was lost
	// (504: the owner may have run it, so it is not passed on again).
	// Routing's refusals (a shard moving or failed over, an owner suspect
	// or unreachable) are not: those requests go upstream uncoordinated,
	// so a move or a failover is never an outage on a shadow endpoint.
	relay bool
	// client is the request's own writer, and sent is set once an answer
	// went to it directly: the owner region's answer to a forward is
	// streamed to the client (see direct), never held whole.
	client http.ResponseWriter
	sent   bool
}

func (s *shadowRun) markRelay() {
	if s != nil {
		s.relay = true
	}
}

// direct returns where an answer the client gets as it comes goes: w
// outside shadow mode; in shadow mode the client's own writer (the
// protocol's recorder would hold the whole answer), marked sent.
func (s *shadowRun) direct(w http.ResponseWriter) http.ResponseWriter {
	if s == nil {
		return w
	}
	s.sent = true
	return s.client
}

// shadowMetrics counts, per endpoint, what enforcement would have done
// with the requests a shadow-mode endpoint passed upstream instead.
type shadowMetrics struct {
	decisions metric.Int64Counter
}

func newShadowMetrics(m metric.Meter) (*shadowMetrics, error) {
	c, err := m.Int64Counter("idemcoord.shadow.decisions",
		metric.WithDescription("Requests a shadow-mode endpoint passed upstream that enforcement would have answered itself, by endpoint and would: would_replay, would_409, would_422, would_429, would_<status>."))
	if err != nil {
		return nil, err
	}
	return &shadowMetrics{decisions: c}, nil
}

// shadow serves a request on a shadow-mode endpoint: the protocol runs
// (fingerprint, claim, record) against a recorder instead of the client.
// If it executed the request upstream, the client gets that answer; if
// enforcement would have answered by itself (a replay, 409, 422, 429, or
// any refusal), the decision is counted and logged and the request is
// passed upstream uncoordinated, exactly as without the gateway. The
// client never sees a replay or a refusal from a shadow endpoint.
func (g *Gateway) shadow(w http.ResponseWriter, r *http.Request, ep *config.Endpoint, actor string, start time.Time) {
	if len(r.Header.Values(HeaderKey)) == 0 {
		if g.policies[ep.Name].KeyRequired {
			g.shadowDecision(r.Context(), ep, "would_400")
		}
		g.passthrough(w, r, actor, ep.Name, start)
		return
	}
	limit := g.policies[ep.Name].MaxRequestBytes
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		g.newCall(w, r, ep, actor, start).Refuse("malformed_body", exchange.Problem{Type: "malformed-body",
			Title: "request body could not be read", Status: http.StatusBadRequest, NewKeySafe: true})
		return
	}
	rest := r.Body
	if int64(len(body)) > limit {
		// Over the cap: enforcement would answer 413. Pass it on whole.
		g.shadowDecision(r.Context(), ep, "would_413")
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), rest))
		g.passthrough(w, r, actor, ep.Name, start)
		return
	}
	run := &shadowRun{rec: recorder{header: http.Header{}}, client: w}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := g.newCall(&run.rec, r, ep, actor, start)
	c.shadow = run
	g.coordinateCall(c)
	if run.sent {
		return
	}
	if run.relay {
		h := w.Header()
		for name, vs := range run.rec.header {
			h[name] = vs
		}
		h.Del(HeaderKeyExpires) // a shadow endpoint honours no key
		w.WriteHeader(run.rec.status)
		w.Write(run.rec.body.Bytes())
		return
	}
	would := "would_" + strconv.Itoa(run.rec.status)
	if run.rec.header.Get(HeaderReplayed) == "true" {
		would = "would_replay"
	}
	g.shadowDecision(r.Context(), ep, would)
	g.log.InfoContext(r.Context(), "shadow: passed upstream what enforcement would have answered",
		"endpoint", ep.Name, "would", would, "operation_id", run.rec.header.Get(HeaderOperationID))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.passthrough(w, r, actor, ep.Name, start)
}

func (g *Gateway) shadowDecision(ctx context.Context, ep *config.Endpoint, would string) {
	g.shadowed.decisions.Add(ctx, 1, metric.WithAttributes(attribute.String("endpoint", ep.Name),
		attribute.String("would", would)))
}
