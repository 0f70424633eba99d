package ledger_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

var secret = []byte("0123456789abcdef0123456789abcdef-ledger-test")

// openStore opens a migrated store whose shards all belong to "east" at
// epoch 1.
func openStore(t testing.TB) *sqlstore.Store {
	t.Helper()
	cfg := sqlstore.DefaultConfig()
	cfg.Migrate, cfg.DSN, cfg.MaxConns = true, pgtest.NewDatabase(t), 8
	s, err := sqlstore.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.BootstrapFences(context.Background(), shard.DefaultCount, func(int) string { return "east" }); err != nil {
		t.Fatal(err)
	}
	return s
}

// owners is a fixed directory view (the gateway's watch-fed cache, not a
// store): shard -> owner, epoch, state.
type owners struct {
	mu sync.Mutex
	m  map[int][3]any
}

func (o *owners) Owner(sh int) (string, int64, string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.m[sh]
	if !ok {
		return "", 0, "", false
	}
	return v[0].(string), v[1].(int64), v[2].(string), true
}

// westGateway serves region west's gateway over real HTTP, on store s,
// with the directory view o, recording held and refused requests on rec.
func westGateway(t *testing.T, s *sqlstore.Store, o gateway.Owners, rec ledger.Recorder, clk clock.Clock) string {
	t.Helper()
	os.Setenv("LEDGER_TEST_SECRET", string(secret))
	cfg, err := config.Parse([]byte(`region: west
listen: 127.0.0.1:0
upstream: http://127.0.0.1:1
store: {dsn: "postgres://x"}
auth: {issuer: test, audience: idemcoord, hs256_secret_env: LEDGER_TEST_SECRET}
endpoints:
  - name: create-thing
    method: POST
    path: /v1/things
    key: required
    upstream_timeout: 5s
    failover: reject
`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := authn.NewVerifier(authn.Config{Issuer: "test", Audience: "idemcoord", HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	self := "http://" + srv.Listener.Addr().String()
	topo, err := region.New("west", []config.Region{{Name: "east", URL: "http://127.0.0.1:1"}, {Name: "west", URL: self}})
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the upstream was called for %s: nothing may run on a refused or held request", r.URL)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	g, err := gateway.New(gateway.Config{Region: "west", Worker: "west-w", Store: s, Auth: v, Endpoints: cfg.Endpoints,
		Next: gateway.NewProxy(u, nil), Owners: o, Topology: topo, Ledger: rec, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv.Config.Handler = g
	srv.Start()
	t.Cleanup(srv.Close)
	return self
}

// post sends a keyed request as actor t/subject and returns the status
// and problem type.
func post(t *testing.T, base, subject, key string) (int, string) {
	t.Helper()
	tok, err := authn.Issue(secret, "test", "idemcoord", authn.Principal{Tenant: "t", Subject: subject}, time.Hour, time.Now())
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

// claim starts an intent of actor under key at tok, as the region of
// tok's gateway would.
func claim(t *testing.T, s *sqlstore.Store, actor, key string, tok fencing.Token, fenced bool) store.Claim {
	t.Helper()
	c, err := s.Begin(context.Background(), store.ClaimRequest{
		Scope:       store.Scope{Actor: actor, Endpoint: "create-thing", Key: idempotency.Key(key)},
		Fingerprint: idempotency.Fingerprint{Version: 1, Sum: [32]byte{1}}, Worker: tok.Region + "-w", Token: tok,
		Lease: time.Minute, TTL: 24 * time.Hour, TakeOverFenced: fenced})
	if err != nil {
		t.Fatalf("claim %s: %v", key, err)
	}
	return c
}

func finish(t *testing.T, s *sqlstore.Store, l *store.Lease, st idempotency.State) {
	t.Helper()
	if err := s.Finish(context.Background(), l, store.Result{State: st, Snapshot: store.Snapshot{Status: 201}}); err != nil {
		t.Fatal(err)
	}
}

// TestTheLedgerOfAFailoverListsEachTouchedIntentWithItsClassAndFinalState:
// region east holds intents in flight and unknown when it fails; the
// controller moves its shards to west (the audited fence moves and the
// region_failover row); west takes one over and resolves one, and its
// gateway, over real HTTP, refuses a new request of a reject endpoint on
// the failed-over shard, refuses a retry of an intent east left in flight,
// and holds a request of a shard still moving until the hold ends on its
// clock. The incident is found in the audit, and its report lists every
// touched intent once, with the right class, state at the start, final
// state and must-act, in table, JSON and CSV; an intent east finished
// before the failover is not listed.
func TestTheLedgerOfAFailoverListsEachTouchedIntentWithItsClassAndFinalState(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	const alice, bob = "t/alice", "t/bob"
	sa, sb := shard.Of(alice, shard.DefaultCount), shard.Of(bob, shard.DefaultCount)
	if sa == sb {
		t.Fatal("the test's actors share a shard; pick others")
	}
	east := func(sh int) fencing.Token { return fencing.Token{Shard: sh, Epoch: 1, Region: "east"} }
	west := func(sh int) fencing.Token { return fencing.Token{Shard: sh, Epoch: 2, Region: "west"} }

	finish(t, s, claim(t, s, alice, "k-before", east(sa), false).Lease, idempotency.Completed)
	claim(t, s, alice, "k-inflight", east(sa), false)
	claim(t, s, alice, "k-transfer", east(sa), false)
	finish(t, s, claim(t, s, alice, "k-unknown", east(sa), false).Lease, idempotency.OutcomeUnknown)
	finish(t, s, claim(t, s, alice, "k-resolve", east(sa), false).Lease, idempotency.OutcomeUnknown)

	reason := "region east failed: no liveness key for 500ms"
	for _, sh := range []int{sa, sb} {
		if err := s.MoveFence(ctx, fencing.Move{Shard: sh, From: 1, To: "west", Operator: failover.ControllerOperator, Reason: reason}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Audit(ctx, failover.ControllerOperator, "region_failover", reason, "region=east shards_moved=2 of 2"); err != nil {
		t.Fatal(err)
	}

	// West takes one intent over and resolves another through the
	// resolve path.
	tc := claim(t, s, alice, "k-transfer", west(sa), true)
	if tc.Outcome != store.TakenOver {
		t.Fatalf("west's claim of k-transfer: %v, want a takeover", tc.Outcome)
	}
	finish(t, s, tc.Lease, idempotency.Completed)
	rec, err := s.Read(ctx, store.Scope{Actor: alice, Endpoint: "create-thing", Key: "k-resolve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Resolve(ctx, rec, west(sa), store.Result{State: idempotency.Completed, Snapshot: store.Snapshot{Status: 201}}); err != nil {
		t.Fatal(err)
	}

	// West's gateway over HTTP: alice's shard FAILED_OVER (reject
	// refuses), bob's still FENCING (held, then asked back).
	notes := ledger.NewNotes(s, 0, nil)
	clk := clock.NewFake(time.Now())
	base := westGateway(t, s, &owners{m: map[int][3]any{
		sa: {"west", int64(2), gateway.ShardFailedOver},
		sb: {"west", int64(2), gateway.ShardFencing},
	}}, notes, clk)
	for _, key := range []string{"k-refused", "k-inflight"} {
		if st, typ := post(t, base, "alice", key); st != http.StatusServiceUnavailable || !strings.HasSuffix(typ, "/region-failover") {
			t.Fatalf("POST %s on the failed-over shard: %d %s, want 503 region-failover", key, st, typ)
		}
	}
	waiting := clk.Waiters()
	held := make(chan int, 1)
	go func() {
		st, _ := post(t, base, "bob", "k-held")
		held <- st
	}()
	clk.BlockUntil(waiting + 2) // the hold's bound and its poll
	clk.Advance(3 * time.Second)
	if st := <-held; st != http.StatusServiceUnavailable {
		t.Fatalf("POST k-held on the moving shard: %d, want 503 once the hold ended", st)
	}
	notes.Close()
	if n := notes.Dropped(); n != 0 {
		t.Fatalf("%d incident events dropped", n)
	}

	// The incident, from the audit.
	audit, err := s.QueryAudit(ctx, store.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	incidents := ledger.Incidents(audit, time.Now())
	if len(incidents) != 1 {
		t.Fatalf("incidents: %+v, want the one failover", incidents)
	}
	in := incidents[0]
	if in.Kind != ledger.KindFailover || in.Region != "east" || len(in.Shards) != 2 || !in.Open {
		t.Fatalf("incident %+v: want an open failover of east over 2 shards", in)
	}

	type want struct {
		class            ledger.Class
		atStart, final   string
		mustAct          bool
		withoutOperation bool
	}
	wants := map[string]want{
		"k-inflight": {ledger.InFlight, "IN_PROGRESS", "IN_PROGRESS", true, false},
		"k-transfer": {ledger.Transferred, "IN_PROGRESS", "COMPLETED", false, false},
		"k-unknown":  {ledger.Unknown, "OUTCOME_UNKNOWN", "OUTCOME_UNKNOWN", true, false},
		"k-resolve":  {ledger.Resolved, "OUTCOME_UNKNOWN", "COMPLETED", false, false},
		"k-refused":  {ledger.Refused, "-", ledger.NotRun, false, true},
		"k-held":     {ledger.Held, "-", ledger.NotRun, false, true},
	}
	byHash := map[string]string{}
	for k := range wants {
		h := idempotency.Key(k).Hash()
		byHash[hexOf(h[:])] = k
	}

	var js bytes.Buffer
	sum, err := ledger.Report(ctx, s, ledger.WindowOf(in), ledger.Header{Incident: &in, From: in.From, To: in.To},
		ledger.Options{Format: ledger.FormatJSON, Page: 2}, &js) // pages of 2: the keyset paging is crossed
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Window  ledger.Header       `json:"window"`
		Entries []ledger.Entry      `json:"entries"`
		Summary []ledger.ClassCount `json:"summary"`
		Total   int                 `json:"total"`
		MustAct int                 `json:"must_act"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatalf("report -o json is not JSON: %v\n%s", err, js.String())
	}
	seen := map[string]bool{}
	for _, e := range doc.Entries {
		k, ok := byHash[e.KeyHash]
		if !ok {
			t.Errorf("entry %+v: not an intent the failover touched (k-before finished before it)", e)
			continue
		}
		if seen[k] {
			t.Errorf("%s listed twice", k)
		}
		seen[k] = true
		w := wants[k]
		if e.Class != w.class || e.StateAtStart != w.atStart || e.FinalState != w.final || e.MustAct != w.mustAct ||
			(e.OperationID == "") != w.withoutOperation {
			t.Errorf("%s: got class %s, at start %s, final %s, must act %v, operation %q; want %s, %s, %s, %v",
				k, e.Class, e.StateAtStart, e.FinalState, e.MustAct, e.OperationID, w.class, w.atStart, w.final, w.mustAct)
		}
		if e.Actor == "" || e.Endpoint != "create-thing" || e.Action == "" || e.NextStep == "" {
			t.Errorf("%s: entry %+v lacks its actor, endpoint, action or next step", k, e)
		}
		if strings.Contains(js.String(), `"`+k+`"`) {
			t.Errorf("the report shows the raw key %s", k)
		}
	}
	for k := range wants {
		if !seen[k] {
			t.Errorf("%s is missing from the ledger", k)
		}
	}
	if doc.Total != len(wants) || doc.MustAct != 2 || len(doc.Summary) != len(ledger.Classes) {
		t.Errorf("JSON totals: %d entries, %d must act, %d summary lines; want %d, 2, %d", doc.Total, doc.MustAct,
			len(doc.Summary), len(wants), len(ledger.Classes))
	}
	for _, l := range doc.Summary {
		if l.Count != sum.Count[l.Class] || l.Count != 1 {
			t.Errorf("summary %s: %d (returned %d), want 1", l.Class, l.Count, sum.Count[l.Class])
		}
	}

	// CSV: a header, one row per intent, every field; the summary apart.
	var c, summary bytes.Buffer
	if _, err := ledger.Report(ctx, s, ledger.WindowOf(in), ledger.Header{Incident: &in}, ledger.Options{Format: ledger.FormatCSV,
		Summary: &summary}, &c); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&c).ReadAll()
	if err != nil {
		t.Fatalf("report -o csv: %v", err)
	}
	if len(recs) != len(wants)+1 || strings.Join(recs[0], ",") != strings.Join(ledger.Columns, ",") {
		t.Errorf("CSV: %d rows, header %v; want %d and %v", len(recs), recs[0], len(wants)+1, ledger.Columns)
	}
	for _, cl := range ledger.Classes {
		if !strings.Contains(summary.String(), string(cl)+":") {
			t.Errorf("CSV summary %q lacks a line for %s", summary.String(), cl)
		}
	}

	// Table: the window line, a header, one line per intent, the summary.
	var tb bytes.Buffer
	if _, err := ledger.Report(ctx, s, ledger.WindowOf(in), ledger.Header{Incident: &in, From: in.From, To: in.To},
		ledger.Options{}, &tb); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(tb.String()), "\n")
	if !strings.HasPrefix(lines[0], "incident "+in.ID+": failover of east") || !strings.HasPrefix(lines[1], "CLASS") {
		t.Errorf("table starts %q / %q; want the incident's window line, then the header", lines[0], lines[1])
	}
	for _, cl := range ledger.Classes {
		if !strings.Contains(tb.String(), "\n"+string(cl)+":") {
			t.Errorf("table summary lacks %s:\n%s", cl, tb.String())
		}
	}
	if got := strings.Count(tb.String(), "YES"); got != 2 {
		t.Errorf("table has %d must-act lines, want 2:\n%s", got, tb.String())
	}
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, x := range b {
		out = append(out, digits[x>>4], digits[x&15])
	}
	return string(out)
}
