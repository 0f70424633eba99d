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
	"github.com/idemcoord/idemcoord/gateway/upstream"
)

// shadowRun is what a shadow-mode request learnt from the protocol: the
// answer it recorded, and what the stages said of it (exchange.Shadow).
type shadowRun struct {
	rec *upstream.Recorder
	exchange.Shadow
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
	run := &shadowRun{rec: upstream.NewRecorder(), Shadow: exchange.Shadow{Client: w}}
	r.Body = io.NopCloser(bytes.NewReader(body))
	c := g.newCall(run.rec, r, ep, actor, start)
	c.Shadow = &run.Shadow
	g.coordinateCall(c)
	if run.Sent {
		return
	}
	if run.Relay {
		h := w.Header()
		for name, vs := range run.rec.Header() {
			h[name] = vs
		}
		h.Del(HeaderKeyExpires) // a shadow endpoint honours no key
		w.WriteHeader(run.rec.Status())
		w.Write(run.rec.Body())
		return
	}
	would := "would_" + strconv.Itoa(run.rec.Status())
	if run.rec.Header().Get(HeaderReplayed) == "true" {
		would = "would_replay"
	}
	g.shadowDecision(r.Context(), ep, would)
	g.log.InfoContext(r.Context(), "shadow: passed upstream what enforcement would have answered",
		"endpoint", ep.Name, "would", would, "operation_id", run.rec.Header().Get(HeaderOperationID))
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.passthrough(w, r, actor, ep.Name, start)
}

func (g *Gateway) shadowDecision(ctx context.Context, ep *config.Endpoint, would string) {
	g.shadowed.decisions.Add(ctx, 1, metric.WithAttributes(attribute.String("endpoint", ep.Name),
		attribute.String("would", would)))
}
