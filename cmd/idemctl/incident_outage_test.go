package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/internal/toxitest"
)

var outageSecret = []byte("0123456789abcdef0123456789abcdef-outage-test")

// outageDaemon runs one single-region idemd whose store (a real
// PostgreSQL) is reached through proxy-controlled dsn, and returns its
// base URL.
func outageDaemon(t *testing.T, dsn string) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"thing_id":"1"}`)
	}))
	t.Cleanup(up.Close)
	os.Setenv("OUTAGE_TEST_SECRET", string(outageSecret))
	cfg, err := config.Parse([]byte(`region: west
worker_id: west-1
listen: 127.0.0.1:0
upstream: ` + up.URL + `
store: {dsn: "` + dsn + `", max_conns: 4}
auth: {issuer: test, audience: idemcoord, hs256_secret_env: OUTAGE_TEST_SECRET}
endpoints:
  - name: create-thing
    method: POST
    path: /v1/things
    key: required
    upstream_timeout: 5s
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := daemon.Start(ctx, cfg, daemon.Options{Logger: slog.New(slog.DiscardHandler), Migrate: true})
	if err != nil {
		t.Fatalf("daemon.Start: %v", err)
	}
	t.Cleanup(func() { d.Shutdown(context.Background()) })
	return "http://" + d.Addr()
}

// postThing sends a keyed request as t/subject and returns the status and
// problem type.
func postThing(t *testing.T, base, subject, key string) (int, string) {
	t.Helper()
	tok, err := authn.Issue(outageSecret, "test", "idemcoord", authn.Principal{Tenant: "t", Subject: subject}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/things", strings.NewReader(`{"amount":"12.50"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var p struct {
		Type string `json:"type"`
	}
	json.Unmarshal(b, &p)
	return resp.StatusCode, p.Type
}

// TestAStoreOutageIsAnIncidentWhoseReportListsTheRefusedRequests: a real
// idemd serves over HTTP on a real PostgreSQL reached through a proxy.
// The proxy goes down: three intents (one retried) are refused 503
// store-unavailable. It comes back and a request runs. `idemctl incident
// list` then shows one store_outage incident of region west whose window
// holds the refusals, and `idemctl incident report ID` lists each refused
// intent once, class refused, nothing ran, no person to act: the notes
// taken while the store was down were kept and written after it. The
// intent finished before the outage and the one run after it are not
// listed.
func TestAStoreOutageIsAnIncidentWhoseReportListsTheRefusedRequests(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	pu, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p := toxitest.Proxy(t, "pg-outage", pu.Host)
	pu.Host = p.Listen
	base := outageDaemon(t, pu.String())

	if st, typ := postThing(t, base, "alice", "k-before"); st != http.StatusCreated {
		t.Fatalf("before the outage: %d %s, want 201", st, typ)
	}
	stoppedAt := time.Now()
	p.Stop() // the store is unreachable
	refused := []struct{ subject, key string }{{"alice", "k-1"}, {"alice", "k-2"}, {"bob", "k-3"}, {"alice", "k-1"}}
	for _, r := range refused {
		if st, typ := postThing(t, base, r.subject, r.key); st != http.StatusServiceUnavailable || !strings.HasSuffix(typ, "/store-unavailable") {
			t.Fatalf("%s %s with the store down: %d %s, want 503 store-unavailable", r.subject, r.key, st, typ)
		}
	}
	if err := p.Start(); err != nil { // it answers again
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		if st, typ := postThing(t, base, "carol", "k-after"); st != http.StatusCreated {
			return &statusError{st, typ}
		}
		return nil
	})
	backAt := time.Now()

	type incident struct {
		ID, Kind, Region, Detail string
		From, To                 time.Time
		Open                     bool
	}
	var in incident
	testutil.Eventually(t, 30*time.Second, func() error {
		out, _, err := ctl(t, "incident", "list", "--dsn", dsn, "-o", "json")
		if err != nil {
			return err
		}
		var list struct{ Incidents []incident }
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return err
		}
		for _, i := range list.Incidents {
			if i.Kind == "store_outage" {
				in = i
				return nil
			}
		}
		return &missingError{out}
	})
	if in.Region != "west" || in.Open || in.From.Before(stoppedAt) || in.To.After(backAt) || !in.To.After(in.From) {
		t.Errorf("incident %+v: want a closed store_outage of west between %s and %s", in, stoppedAt, backAt)
	}
	if !strings.HasPrefix(in.Detail, "4 requests refused") {
		t.Errorf("incident detail %q: want the 4 refusals counted", in.Detail)
	}
	out, _, err := ctl(t, "incident", "list", "--dsn", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ID store_outage west TIME TIME all - gateway/west-1 store unavailable"; !strings.Contains(normal(out), want) {
		t.Errorf("incident list:\n%s\nwant a line %q", out, want)
	}

	out, _, err = ctl(t, "incident", "report", in.ID, "--dsn", dsn, "-o", "json", "--reason", "INC-12 store outage")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Entries []struct {
			Class      string `json:"class"`
			KeyHash    string `json:"key_hash"`
			FinalState string `json:"final_state"`
			Action     string `json:"coordinator_action"`
			MustAct    bool   `json:"must_act"`
		} `json:"entries"`
		Total   int `json:"total"`
		MustAct int `json:"must_act"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("report -o json: %v\n%s", err, out)
	}
	want := map[string]bool{}
	for _, r := range refused[:3] {
		h := idempotency.Key(r.key).Hash()
		want[hex.EncodeToString(h[:])] = true
	}
	for _, e := range doc.Entries {
		if !want[e.KeyHash] {
			t.Errorf("entry %+v: not one of the refused intents", e)
			continue
		}
		delete(want, e.KeyHash)
		if e.Class != "refused" || e.MustAct || e.FinalState != "NOT_RUN" || !strings.Contains(e.Action, "503 store-unavailable") {
			t.Errorf("entry %+v: want class refused, NOT_RUN, no person to act, refused 503 store-unavailable", e)
		}
	}
	if len(want) != 0 || doc.MustAct != 0 {
		t.Errorf("report: %d refused intents missing, %d must act; want none and none:\n%s", len(want), doc.MustAct, out)
	}
	out, _, err = ctl(t, "incident", "report", in.ID, "--dsn", dsn, "--reason", "INC-12 store outage")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "refused:     3\n") || !strings.Contains(out, "total:       3 intents, 0 for a person to act on") {
		t.Errorf("report table: want 3 refused, none to act on:\n%s", out)
	}
}

type statusError struct {
	status int
	typ    string
}

func (e *statusError) Error() string { return http.StatusText(e.status) + " " + e.typ }

type missingError struct{ list string }

func (e *missingError) Error() string { return "no store_outage incident yet in\n" + e.list }
