package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/idemcoord/idemcoord/internal/toxitest"
)

// The standard toxics act on bytes and time, not on protocol messages, so
// none of them can lose exactly "the answer to COMMIT" or "the UPDATE before
// the server sees it": a toxic added inside a LocalFunc would already hit the
// result-saving UPDATE that follows it in the same transaction. The cut
// toxic below frames the PostgreSQL wire protocol and cuts a connection at
// one chosen statement, once, which makes every ambiguity test
// deterministic.

// cutMode says what a tripwire loses.
type cutMode int

const (
	// loseRequest drops the statement and cuts: the server never sees it.
	loseRequest cutMode = iota
	// loseAnswer forwards the statement and cuts the connection at the
	// server's next ReadyForQuery: the statement ran (and committed, for an
	// autocommit statement or COMMIT) but its answer is lost.
	loseAnswer
	// cutAfterRequest forwards the statement and cuts at once: the server
	// got it and may still be executing it when the client gives up.
	cutAfterRequest
	// answerUnknown forwards the statement and replaces the server's whole
	// answer with CockroachDB's 40003 (statement_completion_unknown), the
	// connection kept: the statement ran and committed, and the server
	// says it cannot tell.
	answerUnknown
)

// completionUnknown is an ErrorResponse with SQLSTATE 40003 and the
// ReadyForQuery (idle) that follows it: what CockroachDB answers when it
// cannot tell whether a statement committed.
var completionUnknown = func() []byte {
	var fields []byte
	for _, f := range []string{"SERROR", "VERROR", "C40003", "Mresult is ambiguous"} {
		fields = append(append(fields, f...), 0)
	}
	fields = append(fields, 0)
	msg := binary.BigEndian.AppendUint32([]byte{'E'}, uint32(4+len(fields)))
	msg = append(msg, fields...)
	return append(binary.BigEndian.AppendUint32(append(msg, 'Z'), 5), 'I')
}()

// tripwire names a statement to cut at, once, while armed.
type tripwire struct {
	match func(sql string) bool
	mode  cutMode
	armed atomic.Bool
	await atomic.Bool // loseAnswer: the statement went through; cut at its answer
	// loseCancels drops every CancelRequest, as a partition or a proxy that
	// lost the backend's key would: pgx sends one when it abandons a
	// connection, and PostgreSQL never promises that it lands.
	loseCancels atomic.Bool
	cancels     atomic.Int32 // CancelRequests dropped
	// stayDown makes the cut an outage: from the cut on, down is set and
	// every connection through the proxy (new ones too) is cut at its
	// first bytes, until the test clears down.
	stayDown, down atomic.Bool
	fired          chan struct{}
	closed         sync.Once
}

func (w *tripwire) fire() {
	w.closed.Do(func() {
		if w.stayDown.Load() {
			w.down.Store(true)
		}
		close(w.fired)
	})
}

// Fired reports whether the tripwire cut a connection.
func (w *tripwire) Fired() bool {
	select {
	case <-w.fired:
		return true
	default:
		return false
	}
}

var tripwires sync.Map // wire name -> *tripwire

func init() { toxics.Register("idemcoord_cut", new(cutToxic)) }

// cutToxic runs on both streams of a proxied PostgreSQL connection.
type cutToxic struct {
	Wire   string `json:"wire"`
	Client bool   `json:"client"` // the client->server stream
}

// NewState gives each link its own framer, kept across toxic restarts.
func (t *cutToxic) NewState() any { return &pgFramer{client: t.Client, stmts: map[string]string{}} }

func (t *cutToxic) Pipe(stub *toxics.ToxicStub) {
	v, _ := tripwires.Load(t.Wire)
	w, _ := v.(*tripwire)
	if w == nil { // the test is over: pass everything
		new(toxics.NoopToxic).Pipe(stub)
		return
	}
	f := stub.State.(*pgFramer)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if w.down.Load() {
				stub.Close()
				for range stub.Input {
				}
				return
			}
			hit, cancel := false, false
			f.feed(c.Data, func(typ byte, sql string) {
				switch {
				case typ == cancelRequest:
					cancel = w.loseCancels.Load()
				case t.Client && (typ == 'Q' || typ == 'E') && w.armed.Load() && w.match(sql):
					hit = true
				case !t.Client && typ == 'Z' && w.await.Load():
					hit = true
				}
			})
			if cancel {
				w.cancels.Add(1)
				stub.Close()
				for range stub.Input {
				}
				return
			}
			if !t.Client && w.mode == answerUnknown && w.await.Load() {
				// The statement's answer, up to its ReadyForQuery: withheld,
				// and in its place the 40003.
				if hit && w.await.CompareAndSwap(true, false) {
					c.Data = completionUnknown
					stub.Output <- c
					w.fire()
				}
				continue
			}
			if !hit {
				stub.Output <- c
				continue
			}
			switch {
			case !t.Client:
				if !w.await.CompareAndSwap(true, false) {
					stub.Output <- c
					continue
				}
			case !w.armed.CompareAndSwap(true, false):
				stub.Output <- c
				continue
			case w.mode == loseAnswer || w.mode == answerUnknown:
				w.await.Store(true)
				stub.Output <- c
				continue
			case w.mode == cutAfterRequest:
				stub.Output <- c
			}
			w.fire()
			stub.Close()
			for range stub.Input { // discard the rest; the link is going down
			}
			return
		}
	}
}

// cancelRequest is the type feed reports for an untyped CancelRequest.
const cancelRequest = 0

// pgFramer splits one direction of a PostgreSQL connection into messages
// and remembers which SQL each prepared statement holds, so an Execute can
// be matched by its statement's text.
type pgFramer struct {
	client  bool
	started bool // past the client's untyped startup message
	buf     []byte
	stmts   map[string]string // statement name -> SQL (client stream)
	bound   string            // SQL of the last Bind
}

// feed calls each for every complete message: for a Query its SQL, for an
// Execute the SQL of the statement bound to it.
func (f *pgFramer) feed(data []byte, each func(typ byte, sql string)) {
	f.buf = append(f.buf, data...)
	for {
		if f.client && !f.started {
			// An untyped message (SSL request, startup) starts with its
			// length, whose first byte is 0; typed messages start with a
			// letter. A toxic added to a live link starts at a boundary.
			if len(f.buf) == 0 {
				return
			}
			if f.buf[0] != 0 {
				f.started = true
				continue
			}
			if len(f.buf) < 8 {
				return
			}
			n := int(binary.BigEndian.Uint32(f.buf))
			if len(f.buf) < n {
				return
			}
			code := binary.BigEndian.Uint32(f.buf[4:8])
			f.buf = f.buf[n:]
			f.started = code != 80877103 && code != 80877104 // SSL and GSS requests precede the startup
			if code == 80877102 {
				each(cancelRequest, "")
			}
			continue
		}
		if len(f.buf) < 5 {
			return
		}
		n := int(binary.BigEndian.Uint32(f.buf[1:5]))
		if len(f.buf) < 1+n {
			return
		}
		typ, body := f.buf[0], f.buf[5:1+n]
		sql := ""
		if f.client {
			switch typ {
			case 'P': // Parse: name, query
				if name, rest, ok := bytes.Cut(body, []byte{0}); ok {
					q, _, _ := bytes.Cut(rest, []byte{0})
					f.stmts[string(name)] = string(q)
				}
			case 'B': // Bind: portal, statement
				if _, rest, ok := bytes.Cut(body, []byte{0}); ok {
					name, _, _ := bytes.Cut(rest, []byte{0})
					f.bound = f.stmts[string(name)]
				}
			case 'E':
				sql = f.bound
			case 'Q':
				sql = string(bytes.TrimRight(body, "\x00"))
			}
		}
		each(typ, sql)
		f.buf = f.buf[1+n:]
	}
}

// pgProxy is an in-process toxiproxy in front of a test database.
type pgProxy struct {
	proxy *toxiproxy.Proxy
	dsn   string // the database through the proxy
}

func newPGProxy(t testing.TB, dsn string) *pgProxy {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := toxitest.Proxy(t, "pg", u.Host)
	u.Host = p.Listen
	return &pgProxy{proxy: p, dsn: u.String()}
}

// cut installs a cut toxic on both streams, bound to a new tripwire, and
// returns the tripwire armed as asked. remove takes the toxics off again.
func (p *pgProxy) cut(t testing.TB, name string, mode cutMode, armed bool, match func(sql string) bool) (w *tripwire, remove func()) {
	t.Helper()
	w = &tripwire{match: match, mode: mode, fired: make(chan struct{})}
	w.armed.Store(armed)
	wire := fmt.Sprintf("%s/%s/%p", t.Name(), name, w)
	tripwires.Store(wire, w)
	for _, stream := range []string{"upstream", "downstream"} {
		body := fmt.Sprintf(`{"name":%q,"type":"idemcoord_cut","stream":%q,"attributes":{"wire":%q,"client":%v}}`,
			name+"_"+stream, stream, wire, stream == "upstream")
		if _, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
			t.Fatalf("add toxic: %v", err)
		}
	}
	var once sync.Once
	remove = func() {
		once.Do(func() {
			for _, stream := range []string{"upstream", "downstream"} {
				if err := p.proxy.Toxics.RemoveToxic(context.Background(), name+"_"+stream); err != nil {
					t.Errorf("remove toxic: %v", err)
				}
			}
			tripwires.Delete(wire)
		})
	}
	t.Cleanup(remove)
	return w, remove
}

// statement matches SQL containing fragment, case-insensitively.
func statement(fragment string) func(string) bool {
	return func(sql string) bool { return strings.Contains(strings.ToLower(sql), strings.ToLower(fragment)) }
}
