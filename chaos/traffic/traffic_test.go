package traffic

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// gateway is a small HTTP stand-in for an idemcoord region (the traffic's
// test needs answers, not a store): the first request of a key gets a 503
// once, then 201; a retry replays; another body under the key gets 422.
type gateway struct {
	region string
	mu     *sync.Mutex
	stored map[string][2]string // key -> body hash, operation id
	seen   map[string]bool
}

func (g gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	g.mu.Lock()
	defer g.mu.Unlock()
	w.Header().Set("X-Idempotency-Region", g.region)
	if !g.seen[key] {
		g.seen[key] = true
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	h := fmt.Sprintf("%x", sha256.Sum256(b))
	s, ok := g.stored[key]
	switch {
	case !ok:
		s = [2]string{h, fmt.Sprintf("op-%d", len(g.stored)+1)}
		g.stored[key] = s
	case s[0] != h:
		w.WriteHeader(http.StatusUnprocessableEntity)
		return
	default:
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("X-Idempotency-Operation-Id", s[1])
	w.WriteHeader(http.StatusCreated)
	fmt.Fprintf(w, `{"payment_id":"pay-%s"}`, s[1])
}

func startRegions(t *testing.T) []Region {
	mu := &sync.Mutex{}
	stored, seen := map[string][2]string{}, map[string]bool{}
	var out []Region
	for _, name := range []string{"us-east", "eu-west", "ap-south"} {
		srv := httptest.NewServer(gateway{region: name, mu: mu, stored: stored, seen: seen})
		t.Cleanup(srv.Close)
		out = append(out, Region{Name: name, URL: srv.URL})
	}
	return out
}

func profile() Profile {
	return Profile{Actors: 4, Intents: 40, Duration: time.Minute, CrossRegionRetry: 0.5, ChangedBody: 0.5, DuplicateRetry: 0.5,
		RetryDelay: time.Microsecond}
}

func target(regions []Region) Target {
	return Target{Regions: regions, Tenant: "demo",
		Token: func(context.Context, string) (string, error) { return "tok", nil }}
}

func runOnce(t *testing.T, seed uint64) history.History {
	t.Helper()
	rec := history.NewRecorder()
	tr, err := New(profile(), target(startRegions(t)), seed, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	return rec.History()
}

func TestTrafficRecordsEveryAttemptWithItsAnswer(t *testing.T) {
	h := runOnce(t, 7)
	intents := map[[2]int64]bool{}
	var cross, changed, replays int
	for _, op := range h.Ops {
		intents[[2]int64{int64(op.ClientID), op.Intent}] = true
		if op.Call > op.Return || op.SentTo == "" || op.Key == "" || op.BodyHash == "" {
			t.Fatalf("incomplete operation %+v", op)
		}
		if op.Status == http.StatusCreated && (op.ServedBy != op.SentTo || op.OperationID == "" || op.ResourceID == "") {
			t.Fatalf("answer not recorded: %+v", op)
		}
		if op.Attempt > 1 && op.Replayed {
			replays++
		}
		if op.Status == http.StatusUnprocessableEntity {
			changed++
		}
		if op.Status == http.StatusServiceUnavailable && op.RetryAfter == 0 {
			t.Errorf("503 recorded without its Retry-After: %+v", op)
		}
	}
	for _, ops := range h.ByKey() {
		for i := 1; i < len(ops); i++ {
			if ops[i].SentTo != ops[i-1].SentTo {
				cross++
				break
			}
		}
	}
	if len(intents) != 40 {
		t.Errorf("%d intents, want the bound of 40", len(intents))
	}
	if cross == 0 || changed == 0 || replays == 0 {
		t.Errorf("cross-region retries %d, changed bodies %d, replays %d: want some of each", cross, changed, replays)
	}
}

func TestTrafficReplaysTheSameWorkloadForASeed(t *testing.T) {
	shape := func(h history.History) map[string][]string {
		m := map[string][]string{}
		for key, ops := range h.ByKey() {
			for _, op := range ops {
				m[key] = append(m[key], op.SentTo+" "+op.BodyHash)
			}
		}
		return m
	}
	a, b := shape(runOnce(t, 11)), shape(runOnce(t, 11))
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("the same seed sent different keys, bodies or regions")
	}
	if c := shape(runOnce(t, 12)); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Fatal("seeds 11 and 12 sent the same workload")
	}
}

func TestTrafficClassifiesLostAnswers(t *testing.T) {
	// A server that reads the request and hangs up: the request was sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			c.Read(buf)
			c.Close()
		}
	}()
	// A port nobody listens on: the request was never sent.
	deadURL := "http://" + testutil.RefusingAddr(t)
	t.Cleanup(func() { ln.Close() })
	regions := []Region{{Name: "hangup", URL: "http://" + ln.Addr().String()}, {Name: "dead", URL: deadURL}}
	rec := history.NewRecorder()
	p := profile()
	p.Intents, p.Actors, p.MaxAttempts, p.CrossRegionRetry, p.ChangedBody = 4, 1, 2, 1, 0
	tr, err := New(p, target(regions), 3, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, op := range rec.History().Ops {
		want := history.ErrAfterSend
		if op.SentTo == "dead" {
			want = history.ErrBeforeSend
		}
		if op.Error != want {
			t.Errorf("attempt to %s classified %q, want %q (%s)", op.SentTo, op.Error, want, op.Detail)
		}
	}
}

// TestSDKModeRecordsEveryAttemptTheSDKMakes runs the workload with the
// multi-region SDK against a dead region listed first and two live ones:
// every attempt the SDK makes inside a call is recorded, numbered in
// order per intent and tagged with its call, the dead region's as never
// sent, and each intent ends with an answer, the SDK having moved on to
// a live region within the call.
func TestSDKModeRecordsEveryAttemptTheSDKMakes(t *testing.T) {
	deadURL := "http://" + testutil.RefusingAddr(t)
	regions := append([]Region{{Name: "dead", URL: deadURL}}, startRegions(t)[:2]...)
	tg := target(regions)
	tg.SDK = true
	rec := history.NewRecorder()
	p := profile()
	p.Intents, p.Actors = 12, 3
	tr, err := New(p, tg, 5, rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tr.Settle(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := rec.History()
	attempts := map[[2]int64]int{}
	acked := map[[2]int64]bool{}
	callRegions := map[[2]int64]map[string]bool{}
	for _, op := range h.Ops {
		id := [2]int64{int64(op.ClientID), op.Intent}
		attempts[id]++
		if op.Attempt != attempts[id] {
			t.Errorf("attempt numbered %d, want %d: %+v", op.Attempt, attempts[id], op)
		}
		if op.ClientCall == 0 || op.SentTo == "" || op.Key == "" || op.BodyHash == "" {
			t.Fatalf("incomplete operation %+v", op)
		}
		if op.SentTo == "dead" && op.Error != history.ErrBeforeSend {
			t.Errorf("attempt to the dead region classified %q, want %q", op.Error, history.ErrBeforeSend)
		}
		if op.Status == http.StatusCreated && (op.ServedBy != op.SentTo || op.OperationID == "" || op.ResourceID == "") {
			t.Fatalf("answer not recorded: %+v", op)
		}
		acked[id] = acked[id] || op.Acknowledged()
		c := [2]int64{int64(op.ClientID), op.ClientCall}
		if callRegions[c] == nil {
			callRegions[c] = map[string]bool{}
		}
		callRegions[c][op.SentTo] = true
	}
	if len(acked) != 12 {
		t.Errorf("%d intents, want 12", len(acked))
	}
	for id, ok := range acked {
		if !ok {
			t.Errorf("intent %v never acknowledged", id)
		}
	}
	switched := 0
	for _, rs := range callRegions {
		if len(rs) > 1 {
			switched++
		}
	}
	if switched == 0 {
		t.Error("no call went to more than one region: the SDK's switches were not recorded")
	}
}

// TestEveryAttemptOfAnIntentCarriesItsFirstSentTime: the gateway takes a
// retry whose Idempotency-First-Sent differs from the key's first attempt
// for another intent (422). The first attempt of each intent here is
// refused with Retry-After: 1, so its retry is sent at least a second
// later, in another second of the header's resolution: it must still
// carry the first attempt's value, in every client mode.
func TestEveryAttemptOfAnIntentCarriesItsFirstSentTime(t *testing.T) {
	for _, sdk := range []bool{false, true} {
		var mu sync.Mutex
		first := map[string]string{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, sent := r.Header.Get("Idempotency-Key"), r.Header.Get("Idempotency-First-Sent")
			mu.Lock()
			defer mu.Unlock()
			w.Header().Set("X-Idempotency-Region", "us-east")
			was, seen := first[key]
			switch {
			case !seen:
				first[key] = sent
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusConflict)
			case was != sent:
				w.WriteHeader(http.StatusUnprocessableEntity)
			default:
				w.Header().Set("X-Idempotency-Operation-Id", "op-"+key)
				w.WriteHeader(http.StatusCreated)
			}
		}))
		t.Cleanup(srv.Close)
		tg := target([]Region{{Name: "us-east", URL: srv.URL}})
		tg.SDK = sdk
		p := profile()
		p.Intents, p.Actors, p.DuplicateRetry, p.ChangedBody = 2, 1, 0, 0
		rec := history.NewRecorder()
		tr, err := New(p, tg, 9, rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		acked := 0
		for _, op := range rec.History().Ops {
			if op.Status == http.StatusUnprocessableEntity {
				t.Errorf("sdk=%v: a retry of intent %d was taken for another intent (422): its First-Sent changed", sdk, op.Intent)
			}
			if op.Acknowledged() {
				acked++
			}
		}
		if acked != 2 {
			t.Errorf("sdk=%v: %d intents acknowledged, want 2", sdk, acked)
		}
	}
}
