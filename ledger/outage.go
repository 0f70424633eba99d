package ledger

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// A store outage, as one gateway sees it: from the first of its store
// calls that failed unavailable (store.ErrUnavailable) to the first that
// answered again, having started inside the window (a call already under
// way when the store went down proves nothing). The requests the gateway
// refused meanwhile (503 store-unavailable: nothing ran) are noted like
// held and refused requests (StoreDownDetail), kept while the store is
// down and written after it; the window itself is written to the repair
// audit (ActionStoreOutage) once the store answers, and Incidents reads
// it back as a store_outage incident.

// ActionStoreOutage is the audit action of a store outage window.
const ActionStoreOutage = "store_outage"

// StoreDownDetail is an incident event's Detail for a request refused
// because the store was unavailable (503 store-unavailable).
const StoreDownDetail = "503 store-unavailable"

// minOutage is how long a window that refused no request must have
// lasted to be audited: a failed background call answered at once is a
// blip, not an incident. A window that refused a request is always kept:
// the ledger is the list of the intents it touched.
const minOutage = time.Second

// Outage is one store outage window a gateway saw.
type Outage struct {
	Region, Worker string
	From, To       time.Time
	// Refused counts the requests refused meanwhile (every retry).
	Refused int
}

// detail is the audit row's detail, which ParseOutage reads back.
func (o Outage) detail() string {
	return fmt.Sprintf("region=%s worker=%s from=%s to=%s refused=%d", o.Region, o.Worker,
		o.From.UTC().Format(time.RFC3339Nano), o.To.UTC().Format(time.RFC3339Nano), o.Refused)
}

var outageRe = regexp.MustCompile(`^region=(\S*) worker=(\S*) from=(\S+) to=(\S+) refused=(\d+)`)

// ParseOutage reads a store_outage audit row's detail.
func ParseOutage(r store.AuditRow) (Outage, bool) {
	m := outageRe.FindStringSubmatch(r.Detail)
	if r.Action != ActionStoreOutage || m == nil {
		return Outage{}, false
	}
	from, err1 := time.Parse(time.RFC3339Nano, m[3])
	to, err2 := time.Parse(time.RFC3339Nano, m[4])
	n, err3 := strconv.Atoi(m[5])
	if err1 != nil || err2 != nil || err3 != nil {
		return Outage{}, false
	}
	return Outage{Region: m[1], Worker: m[2], From: from, To: to, Refused: n}, true
}

// outages is a Notes' store outage state.
type outages struct {
	clock          clock.Clock
	region, worker string
	down           atomic.Bool   // a window is open
	gen            atomic.Uint64 // windows opened so far
	mu             sync.Mutex
	cur            Outage   // the open window
	closed         []Outage // closed, for the writer to audit
}

// storeFailed opens a window, unless one is open.
func (n *Notes) storeFailed() {
	if n.out.down.Load() {
		return
	}
	n.openOutage(n.out.clock.Now())
}

func (n *Notes) openOutage(at time.Time) {
	o := &n.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down.Load() {
		return
	}
	o.cur = Outage{Region: o.region, Worker: o.worker, From: at}
	o.gen.Add(1)
	o.down.Store(true)
}

// refusedInOutage counts a request refused at at in the open window,
// opening one when the refusal came first.
func (n *Notes) refusedInOutage(at time.Time) {
	n.openOutage(at)
	o := &n.out
	o.mu.Lock()
	o.cur.Refused++
	o.mu.Unlock()
}

// storeAnswered closes the open window if it was open when the call
// that answered started (gen, from outageGen).
func (n *Notes) storeAnswered(gen uint64) {
	o := &n.out
	if !o.down.Load() {
		return // the steady state: one atomic load
	}
	o.mu.Lock()
	if !o.down.Load() || o.gen.Load() != gen {
		o.mu.Unlock()
		return
	}
	o.cur.To = o.clock.Now()
	o.down.Store(false)
	if o.cur.Refused > 0 || o.cur.To.Sub(o.cur.From) >= minOutage {
		o.closed = append(o.closed, o.cur)
	}
	o.mu.Unlock()
	n.signal() // write what was kept, and the window
}

// outageGen is the generation a store call starts in, 0 when no window
// is open: storeAnswered closes only a window the call started inside.
func (n *Notes) outageGen() uint64 {
	if !n.out.down.Load() {
		return 0
	}
	return n.out.gen.Load()
}

// takeWindows returns the windows closed since the last call.
func (n *Notes) takeWindows() []Outage {
	o := &n.out
	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.closed
	o.closed = nil
	return w
}

// writeWindows audits windows, and returns those not written.
func (n *Notes) writeWindows(windows []Outage) ([]Outage, error) {
	for len(windows) > 0 {
		w := windows[0]
		ctx, cancel := context.WithTimeout(context.Background(), notesWriteTimeout)
		err := n.sink.Audit(ctx, "gateway/"+w.Worker, ActionStoreOutage, "store unavailable", w.detail())
		cancel()
		if err != nil {
			return windows, err
		}
		windows = windows[1:]
	}
	return nil, nil
}

// NoteStoreDown returns what the gateway calls (exchange.Outcomes) when
// it refuses a request of actor at endpoint under key because the store
// is unavailable: a refused event on rec (class refused, StoreDownDetail;
// only the key's hash is kept) of region, on the actor's shard of shards
// at the epoch epoch returns (the gateway's cached fence, 0 when none).
// Nil when rec is nil.
func NoteStoreDown(rec Recorder, region string, shards int, epoch func(actor string) int64) func(actor, endpoint string, key idempotency.Key) {
	if rec == nil {
		return nil
	}
	return func(actor, endpoint string, key idempotency.Key) {
		if key == "" {
			return
		}
		sh := shard.Of(actor, shards)
		rec.Note(store.IncidentEvent{Class: store.EventRefused, Region: region, Shard: sh, Epoch: epoch(actor),
			Actor: actor, Endpoint: endpoint, KeyHash: key.Hash(), Detail: StoreDownDetail})
	}
}
