package replay

import (
	"encoding/json"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// Stored is what is stored of an answer classified as state: the
// snapshot, reduced to the replay's Keep fields when the body is not
// stored whole (a completed operation on a reference endpoint, whose
// replay re-reads the resource; or a body over the cap), with the
// endpoint's secrets sealed. A terminal failure on a reference endpoint
// is replayed from its snapshot (there is no resource to re-read), so its
// error body is kept whole.
// s is the answer's snapshot and body its whole body.
func (st *Stage) Stored(c *exchange.Request, s store.Snapshot, body []byte, state idempotency.State) store.Snapshot {
	r := c.Endpoint.Replay
	if (r.Reference() && state == idempotency.Completed) || s.BodyOmitted {
		s.Body, s.BodyOmitted = nil, true
		if kept, ok := keepFields(body, r.Keep); ok && int64(len(kept)) <= c.Policy.MaxResponseBytes {
			s.Body = kept
		}
	}
	return st.seal(c, s)
}

// keepFields returns a JSON object holding only the values the pointers
// name, at the same places ({"id":..., "card":{"last4":...}}). ok is false
// when there are no pointers, the body is not JSON, or none is found.
func keepFields(body []byte, keep []string) ([]byte, bool) {
	if len(keep) == 0 || len(body) == 0 {
		return nil, false
	}
	pointers := make([][]string, 0, len(keep))
	for _, k := range keep {
		if p, err := idempotency.ParsePointer(k); err == nil {
			pointers = append(pointers, p)
		}
	}
	spans, err := findSpans(body, pointers)
	if err != nil || len(spans) == 0 {
		return nil, false
	}
	root := map[string]any{}
	for _, sp := range spans {
		m, p := root, pointers[sp.field]
		for _, tok := range p[:len(p)-1] {
			next, _ := m[tok].(map[string]any)
			if next == nil {
				next = map[string]any{}
				m[tok] = next
			}
			m = next
		}
		m[p[len(p)-1]] = json.RawMessage(body[sp.start:sp.end])
	}
	out, err := json.Marshal(root)
	return out, err == nil
}
