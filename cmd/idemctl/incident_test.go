package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// ctl runs idemctl in-process and returns its stdout and stderr.
func ctl(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := rootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = cmd.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// failedOverStore returns a migrated store where region east left one
// intent in flight and one unknown (and finished one before) when the
// controller failed its actor's shard over to west.
func failedOverStore(t *testing.T) string {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	if _, _, err := ctl(t, "migrate", "--dsn", dsn); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := sqlstore.DefaultConfig()
	cfg.DSN = dsn
	s, err := sqlstore.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.BootstrapFences(ctx, shard.DefaultCount, func(int) string { return "east" }); err != nil {
		t.Fatal(err)
	}
	const actor = "t/alice"
	sh := shard.Of(actor, shard.DefaultCount)
	begin := func(key string) store.Claim {
		c, err := s.Begin(ctx, store.ClaimRequest{Scope: store.Scope{Actor: actor, Endpoint: "pay", Key: idempotency.Key(key)},
			Fingerprint: idempotency.Fingerprint{Version: 1}, Worker: "east-w", Token: fencing.Token{Shard: sh, Epoch: 1, Region: "east"},
			Lease: time.Minute, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for key, st := range map[string]idempotency.State{"before": idempotency.Completed, "unknown": idempotency.OutcomeUnknown} {
		if err := s.Finish(ctx, begin(key).Lease, store.Result{State: st, Snapshot: store.Snapshot{Status: 201}}); err != nil {
			t.Fatal(err)
		}
	}
	begin("inflight")
	if err := s.MoveFence(ctx, fencing.Move{Shard: sh, From: 1, To: "west", Operator: "controller", Reason: "region east failed"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Audit(ctx, "controller", "region_failover", "region east failed", "region=east shards_moved=1 of 1"); err != nil {
		t.Fatal(err)
	}
	return dsn
}

var (
	uuidRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRe = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	hashRe = regexp.MustCompile(`\b[0-9a-f]{16}\b`)
	idRe   = regexp.MustCompile(`\b[0-9a-f]{8}\b`)
	wsRe   = regexp.MustCompile(` +`)
)

// normal replaces what differs from run to run (ids, times, hashes) and
// collapses alignment.
func normal(s string) string {
	s = uuidRe.ReplaceAllString(s, "UUID")
	s = timeRe.ReplaceAllString(s, "TIME")
	s = hashRe.ReplaceAllString(s, "HASH")
	s = idRe.ReplaceAllString(s, "ID")
	return wsRe.ReplaceAllString(s, " ")
}

// TestIncidentListAndReportPrintTheLedgerAsTableJSONAndCSV: on a store
// whose audit holds one controller failover, `idemctl incident list`
// shows it, and `idemctl incident report ID` prints the ledger of the
// intents east left (in flight and unknown, each a person's to act on;
// the one finished before is not listed) as the golden table, as JSON
// with a summary per class, and as CSV whose summary goes to stderr; the
// access is audited.
func TestIncidentListAndReportPrintTheLedgerAsTableJSONAndCSV(t *testing.T) {
	dsn := failedOverStore(t)
	out, _, err := ctl(t, "incident", "list", "--dsn", dsn, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Incidents []struct {
			ID, Kind, Region string
			Open             bool
			Shards           []int
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil || len(list.Incidents) != 1 {
		t.Fatalf("incident list -o json: %v\n%s", err, out)
	}
	in := list.Incidents[0]
	if in.Kind != "failover" || in.Region != "east" || !in.Open || len(in.Shards) != 1 {
		t.Errorf("incident %+v: want an open failover of east over one shard", in)
	}
	out, _, err = ctl(t, "incident", "list", "--dsn", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ID KIND REGION FROM TO SHARDS ENDED BY OPERATOR REASON\nID failover east TIME open 1 - controller region east failed\n"; normal(out) != want {
		t.Errorf("incident list:\n%s\nnormalised %q\nwant %q", out, normal(out), want)
	}

	out, _, err = ctl(t, "incident", "report", in.ID, "--dsn", dsn, "--reason", "INC-9 finance")
	if err != nil {
		t.Fatal(err)
	}
	golden := `incident ID: failover of east by controller (region east failed), TIME to TIME (still open), 1 shards
CLASS OPERATION ACTOR ENDPOINT KEY_HASH SHARD AT_START FINAL MUST_ACT WHAT THE COORDINATOR DID NEXT STEP
in_flight UUID t/alice pay HASH 212 IN_PROGRESS IN_PROGRESS YES left alone: its region was fenced out at epoch 2 (shard moved to west) reconcile before accepting the new owner: idemctl op get UUID, then idemctl op reconcile
unknown UUID t/alice pay HASH 212 OUTCOME_UNKNOWN OUTCOME_UNKNOWN YES left OUTCOME_UNKNOWN: never re-run blindly ask the downstream by operation id, then idemctl op reconcile UUID

in_flight: 1 (1 must act)
held: 0
refused: 0
transferred: 0
resolved: 0
unknown: 1 (1 must act)
total: 2 intents, 2 for a person to act on
`
	got := normal(out)
	// The two lines come in key-hash order; compare them as a set.
	gl, wl := strings.Split(got, "\n"), strings.Split(golden, "\n")
	if len(gl) == len(wl) && strings.HasPrefix(gl[2], "unknown") {
		gl[2], gl[3] = gl[3], gl[2]
	}
	if strings.Join(gl, "\n") != golden {
		t.Errorf("incident report (table), normalised:\n%s\nwant:\n%s", got, golden)
	}

	out, _, err = ctl(t, "incident", "report", in.ID, "--dsn", dsn, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Window struct {
			Incident struct{ ID string } `json:"incident"`
		} `json:"window"`
		Entries []map[string]any `json:"entries"`
		Summary []struct {
			Class   string
			Count   int
			MustAct int `json:"must_act"`
		} `json:"summary"`
		Total   int `json:"total"`
		MustAct int `json:"must_act"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("report -o json: %v\n%s", err, out)
	}
	if doc.Window.Incident.ID != in.ID || len(doc.Entries) != 2 || doc.Total != 2 || doc.MustAct != 2 || len(doc.Summary) != 6 {
		t.Errorf("report -o json: %s", out)
	}
	for _, e := range doc.Entries {
		for _, k := range []string{"class", "actor", "endpoint", "key_hash", "operation_id", "shard", "state_at_start",
			"coordinator_action", "final_state", "must_act", "next_step"} {
			if _, ok := e[k]; !ok {
				t.Errorf("entry %v lacks %s", e, k)
			}
		}
		if h, _ := e["key_hash"].(string); len(h) != 64 {
			t.Errorf("key_hash %q: want the 64 hex digits of the SHA-256", h)
		}
	}

	out, errOut, err := ctl(t, "incident", "report", in.ID, "--dsn", dsn, "-o", "csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][0] != "class" || len(rows[1]) != 12 {
		t.Errorf("report -o csv: %v\n%s", err, out)
	}
	if !strings.Contains(errOut, "unknown:     1 (1 must act)") || !strings.Contains(errOut, "total:") {
		t.Errorf("report -o csv: summary on stderr %q", errOut)
	}

	out, _, err = ctl(t, "audit", "--dsn", dsn, "--action", "ledger_report", "-o", "json")
	if err != nil || !strings.Contains(out, "INC-9 finance") || !strings.Contains(out, "incident="+in.ID) {
		t.Errorf("the report's access is not in the audit: %v\n%s", err, out)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"incident", "report", "--dsn", dsn}, "give an incident ID"},
		{[]string{"incident", "report", "ffffffff", "--dsn", dsn}, `no incident "ffffffff"`},
		{[]string{"incident", "report", in.ID, "--dsn", dsn, "-o", "yaml"}, "--output: must be table, json or csv"},
		{[]string{"incident", "report", "--from", "yesterday", "--dsn", dsn}, "--from: want an RFC 3339 time"},
	} {
		if _, _, err := ctl(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("idemctl %s: %v; want an error saying %q", strings.Join(c.args[:3], " "), err, c.want)
		}
	}
}
