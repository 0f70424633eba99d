package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/clock"
)

// gateway is a small in-memory stand-in for idemd: it dedups requests by
// key the way the contract says (first request per key runs the upstream
// and stores its answer; later ones replay it with Idempotent-Replayed:
// true; a different request under the same key is 422), and it records
// every request it receives so tests can compare what each attempt sent.
type gateway struct {
	// Faults, set before use.
	failFirst  int    // answer the first failFirst requests of each key with failStatus
	failStatus int    // 409, 429 or 503
	kind       string // the problem type of those answers; default in-progress
	retryAfter string // Retry-After on those answers; none if empty
	loseFirst  bool   // run the first request of each key, then drop the connection
	token      string // if set, require "Bearer "+token
	// block, if set, holds every upstream run until it is closed.
	block chan struct{}
	// latency is how long each upstream run takes.
	latency time.Duration

	mu   sync.Mutex
	seen map[string][]seenRequest // by key
	ops  map[string]*operation    // by key
	runs map[string]int           // upstream executions by key
	nOps int
}

// seenRequest is what one request carried.
type seenRequest struct {
	KeyHeader   string
	Body        string
	Auth        string
	ContentType string
}

// operation is a stored key.
type operation struct {
	id          string
	fingerprint string // method, path and body
	done        bool
	status      int
	body        []byte
	contentType string
}

func newGateway() *gateway {
	return &gateway{
		seen: make(map[string][]seenRequest),
		ops:  make(map[string]*operation),
		runs: make(map[string]int),
	}
}

// requests returns what the gateway received under key.
func (g *gateway) requests(key string) []seenRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]seenRequest(nil), g.seen[key]...)
}

// executions returns how often the upstream ran under key.
func (g *gateway) executions(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.runs[key]
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw := r.Header.Get("Idempotency-Key")
	key, ok := parseSFString(raw)
	if !ok {
		problem(w, http.StatusBadRequest, "invalid-key", "", "", true)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	fp := r.Method + " " + r.URL.Path + " " + string(body)

	g.mu.Lock()
	g.seen[key] = append(g.seen[key], seenRequest{
		KeyHeader: raw, Body: string(body),
		Auth: r.Header.Get("Authorization"), ContentType: r.Header.Get("Content-Type"),
	})
	n := len(g.seen[key])
	op := g.ops[key]
	switch {
	case g.token != "" && r.Header.Get("Authorization") != "Bearer "+g.token:
		g.mu.Unlock()
		problem(w, http.StatusUnauthorized, "unauthorized", "", "", true)
		return
	case n <= g.failFirst:
		g.mu.Unlock()
		if g.retryAfter != "" {
			w.Header().Set("Retry-After", g.retryAfter)
		}
		kind := g.kind
		if kind == "" {
			kind = "in-progress"
		}
		problem(w, g.failStatus, kind, "", "IN_PROGRESS", false)
		return
	case op != nil && op.fingerprint != fp:
		g.mu.Unlock()
		problem(w, http.StatusUnprocessableEntity, "fingerprint-mismatch", "", "", true)
		return
	case op != nil && !op.done:
		g.mu.Unlock()
		w.Header().Set("Retry-After", "0")
		problem(w, http.StatusConflict, "in-progress", op.id, "IN_PROGRESS", false)
		return
	case op != nil:
		g.mu.Unlock()
		w.Header().Set("Idempotent-Replayed", "true")
		writeStored(w, op)
		return
	}
	g.nOps++
	op = &operation{id: fmt.Sprintf("op-%d", g.nOps), fingerprint: fp}
	g.ops[key] = op
	g.mu.Unlock()

	if g.block != nil {
		select {
		case <-g.block:
		case <-r.Context().Done():
		}
	}
	time.Sleep(g.latency)
	status, ctype, out := upstream(r.URL.Path, op.id, body)

	g.mu.Lock()
	g.runs[key]++
	// The contract stores 2xx-4xx except 408, 425 and 429; the rest are
	// RETRYABLE_FAILURE and the next retry runs the upstream again.
	if status < 500 && status != 408 && status != 425 && status != 429 {
		op.done, op.status, op.body, op.contentType = true, status, out, ctype
	} else {
		delete(g.ops, key)
	}
	lose := g.loseFirst && g.runs[key] == 1
	g.mu.Unlock()

	if lose {
		// The upstream ran and the answer is stored; the client never
		// hears of it.
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	writeStored(w, &operation{id: op.id, status: status, body: out, contentType: ctype})
}

// upstream is the API behind the gateway: /v1/status/NNN answers NNN, any
// other path creates a payment.
func upstream(path, opID string, body []byte) (status int, contentType string, out []byte) {
	if s, ok := strings.CutPrefix(path, "/v1/status/"); ok {
		code, _ := strconv.Atoi(s)
		out, _ := json.Marshal(map[string]any{"type": "https://upstream.example/problems/rejected", "title": "rejected by upstream", "status": code})
		return code, "application/problem+json", out
	}
	out, _ = json.Marshal(map[string]any{"payment_id": "pay-" + opID, "request": json.RawMessage(body)})
	return http.StatusCreated, "application/json", out
}

func writeStored(w http.ResponseWriter, op *operation) {
	w.Header().Set("X-Idempotency-Operation-Id", op.id)
	w.Header().Set("Content-Type", op.contentType)
	w.WriteHeader(op.status)
	w.Write(op.body)
}

// problem writes an application/problem+json answer of the gateway.
func problem(w http.ResponseWriter, status int, kind, opID, state string, newKeySafe bool) {
	doc := map[string]any{
		"type":         "https://idemcoord.dev/problems/" + kind,
		"title":        strings.ReplaceAll(kind, "-", " "),
		"status":       status,
		"detail":       "test gateway says " + kind,
		"new_key_safe": newKeySafe,
	}
	if opID != "" {
		doc["operation_id"] = opID
	}
	if state != "" {
		doc["operation_state"] = state
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(doc)
}

// parseSFString decodes an RFC 8941 sf-string strictly: the client always
// quotes, so a bare token is a failure here.
func parseSFString(v string) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	var sb strings.Builder
	for i := 1; i < len(v)-1; i++ {
		switch c := v[i]; {
		case c == '\\':
			i++
			if i == len(v)-1 || (v[i] != '"' && v[i] != '\\') {
				return "", false
			}
			sb.WriteByte(v[i])
		case c == '"' || c < 0x20 || c > 0x7e:
			return "", false
		default:
			sb.WriteByte(c)
		}
	}
	return sb.String(), sb.Len() > 0
}

// testEpoch is where the clients' fake clocks start.
var testEpoch = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// sleepRecorder is the clock of a client under test: a *clock.Fake that
// records every wait Do asks for and moves past it at once, so no test
// sleeps and each can check the waits.
type sleepRecorder struct {
	*clock.Fake
	mu sync.Mutex
	d  []time.Duration
}

func newSleepRecorder() *sleepRecorder { return &sleepRecorder{Fake: clock.NewFake(testEpoch)} }

// NewTimer records d and advances the fake clock by it, firing the timer.
func (s *sleepRecorder) NewTimer(d time.Duration) clock.Timer {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	t := s.Fake.NewTimer(d)
	s.Fake.Advance(d)
	return t
}

func (s *sleepRecorder) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// startGateway serves g and returns a client for it whose waits are
// recorded instead of slept. Keep-alives are off so that the transport
// never retries on a reused connection by itself: the server then sees
// exactly the client's attempts.
func startGateway(t *testing.T, g *gateway, edit func(*client.Config)) (*client.Client, *sleepRecorder) {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	rec := newSleepRecorder()
	cfg := client.Config{
		BaseURL:    srv.URL,
		HTTPClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second},
		Seed:       1,
		Clock:      rec,
	}
	if edit != nil {
		edit(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, rec
}
