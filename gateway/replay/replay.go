// Package replay is the gateway's stage that answers with a key's
// recorded outcome: the stored snapshot (its sealed secrets opened for the
// owning actor), a reference replay that re-reads the resource the
// operation created, or replay-expired once only the key's marker is
// kept. It also prepares what is stored of an answer (the kept fields,
// the sealed secrets), since what is stored is what it replays.
package replay

import (
	"context"
	"net/http"
	"strconv"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// Passer sends a request upstream as it is: the (traced) executor's
// passthrough, which a reference replay's re-read goes through.
type Passer interface {
	Pass(w http.ResponseWriter, r *http.Request)
}

// Stage replays. It holds the endpoints' sealers and the passthrough.
type Stage struct {
	secrets map[string]*sealer
	pass    Passer
}

// New returns the replay stage of endpoints eps, re-reading resources
// through pass.
func New(eps []config.Endpoint, pass Passer) (*Stage, error) {
	secrets, err := newSealers(eps)
	if err != nil {
		return nil, err
	}
	return &Stage{secrets: secrets, pass: pass}, nil
}

// Replay answers with rec, the key's recorded outcome: a reference replay
// of the resource it created when the endpoint asks for one and reread
// allows it (a shadow run does not), replay-expired once only the key's
// marker is kept, or the snapshot with its sealed fields revealed.
func (st *Stage) Replay(ctx context.Context, c *exchange.Request, rec store.Record, reread bool) {
	if c.Endpoint.Replay.Reference() && reread && rec.Snapshot.ResourceID != "" &&
		rec.State == idempotency.Completed && !rec.Purged {
		st.replayReference(ctx, c, rec)
		return
	}
	if rec.Compacted {
		Expired(c, rec)
		return
	}
	rec, err := st.Reveal(c.W, c.Actor, rec)
	if err != nil {
		secretUnavailable(c, err)
		return
	}
	c.Outcomes.Count(ctx, c.Endpoint.Name, "replay", c.Start)
	WriteSnapshot(c.W, rec, true)
}

// Cancelled answers a retry of an async request whose operation was
// cancelled: the cancellation is the answer, replayed, never a second
// task (replay-expired once its answer is gone).
func Cancelled(ctx context.Context, c *exchange.Request, rec store.Record) {
	if rec.Compacted {
		Expired(c, rec)
		return
	}
	c.Outcomes.Count(ctx, c.Endpoint.Name, "replay", c.Start)
	WriteSnapshot(c.W, rec, true)
}

// WriteSnapshot replays a stored response.
func WriteSnapshot(w http.ResponseWriter, rec store.Record, replayed bool) {
	h := w.Header()
	for name, vs := range rec.Snapshot.Header {
		h[name] = vs
	}
	h.Set(exchange.HeaderOperationID, rec.OperationID.String())
	if replayed {
		h.Set(exchange.HeaderReplayed, "true")
	}
	if rec.Snapshot.BodyOmitted || rec.Purged {
		h.Set("Idempotent-Body-Omitted", "true")
	}
	h.Set("Content-Length", strconv.Itoa(len(rec.Snapshot.Body)))
	w.WriteHeader(rec.Snapshot.Status)
	w.Write(rec.Snapshot.Body)
}
