package chaos_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/scenario"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

const smoke = `name: smoke
description: no faults; the pipeline end to end on the in-process dev cluster
policy: reject
duration: 20s
lease: 30s
probe_interval: 1s
traffic:
  actors: 4
  intents: 24
  cross_region_retry: 0.5
  duplicate_retry: 0.5
  changed_body: 0.3
faults:
  count: 0
`

// TestRunDrivesThePipelineEndToEndOnTheDevCluster runs traffic, probes,
// the checker and the report against the real in-process cluster (real
// gateways, PostgreSQL, etcd, payments and bank), then breaks the ledger
// by hand and checks that the same history is now flagged.
func TestRunDrivesThePipelineEndToEndOnTheDevCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc, err := scenario.Parse([]byte(smoke))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.StartDev(ctx, cluster.Options{Policy: string(sc.Policy), Lease: sc.Lease})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	// The dev cluster does not assign shard owners yet (the regions work
	// lands later), so "every shard has an owner" is not asked of it.
	opts := chaos.Options{Validate: validate.Options{AllowUnownedShards: true}}
	res, err := chaos.Run(ctx, sc, 1, c, opts)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := res.Report.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", text.String())
	if !res.Verdict.Safe() {
		t.Fatalf("violations on a healthy cluster:\n%s", text.String())
	}
	if res.Report.Acked < 24 || res.Report.Replayed == 0 || res.Report.Duplicates != 0 {
		t.Errorf("acknowledged %d (want every one of the 24 intents and replays), replayed %d, duplicates %d",
			res.Report.Acked, res.Report.Replayed, res.Report.Duplicates)
	}
	cov := res.Verdict.Coverage
	if cov.StaleEpochRejected == 0 || cov.Retries40001 == 0 {
		t.Errorf("probes not counted: %+v", cov)
	}
	if err := res.Err(); !errors.Is(err, chaos.ErrNotCovered) {
		t.Errorf("Err() = %v: a run without moves or takeovers must not count as green", err)
	}
	var page bytes.Buffer
	if err := res.Report.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "report.html"), page.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	// The history persists and re-checks to the same verdict.
	var saved bytes.Buffer
	if err := history.WriteJSONL(&saved, res.History); err != nil {
		t.Fatal(err)
	}
	h, err := history.ReadJSONL(&saved)
	if err != nil {
		t.Fatal(err)
	}
	again, err := chaos.Recheck(ctx, h, c, opts.Validate)
	if err != nil || !again.Safe() {
		t.Fatalf("re-check of the saved history: %v %v", err, again.Violations)
	}

	// Charge one acknowledged operation a second time, behind the
	// coordinator's back: the checker must see it from the ledger alone.
	var acked history.Operation
	for _, op := range h.Ops {
		if op.Acknowledged() && op.OperationID != "" {
			acked = op
			break
		}
	}
	pool, err := pgxpool.New(ctx, c.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `INSERT INTO bank_charges (charge_id, operation_id, actor, amount, currency, created_at)
		VALUES ($1, $2, $3, 1, 'EUR', now())`, uuid.New(), acked.OperationID, acked.Actor); err != nil {
		t.Fatal(err)
	}
	broken, err := chaos.Recheck(ctx, h, c, opts.Validate)
	if err != nil {
		t.Fatal(err)
	}
	got := broken.Of(validate.I2)
	if len(got) == 0 {
		t.Fatalf("a double charge was not flagged; violations: %v", broken.Violations)
	}
	named := false
	for _, v := range got {
		named = named || (v.KeyHash == history.KeyHash(acked.Key) && len(v.Excerpt) > 0)
	}
	if !named {
		t.Errorf("no I2 violation names the key with an excerpt: %v", got)
	}
}
