package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// isReRead matches the store's re-read of one record by its key.
func isReRead(sql string) bool {
	return strings.HasPrefix(strings.TrimSpace(sql), "SELECT actor_scope, endpoint")
}

// TestAmbiguousHeartbeatKeepsItsOwnLease: a heartbeat commits, its answer
// is lost, and so is the re-read that would have told the store so. The
// record's version moved while its lease owner is still this lease's: that
// was this worker's own write, and the worker's next writes (a stage, the
// Finish) must go through, not be refused as a lost ownership.
func TestAmbiguousHeartbeatKeepsItsOwnLease(t *testing.T) {
	ctx := context.Background()
	direct, via, p, logs := proxied(t, newClock())
	req := request(t, "tenant/alice", "ambiguous-heartbeat", `{}`)
	c := mustBegin(t, via, req, store.FirstRun)

	hb, removeHB := p.cut(t, "heartbeat", loseAnswer, true, statement("now()) + $10::INT8"))
	rr, removeRR := p.cut(t, "reread", loseRequest, true, isReRead)
	err := via.Heartbeat(ctx, c.Lease)
	removeHB()
	removeRR()
	if !hb.Fired() || !rr.Fired() {
		t.Fatalf("tripwires fired: heartbeat %v, re-read %v; want both", hb.Fired(), rr.Fired())
	}
	var amb *store.AmbiguousCommitError
	if !errors.As(err, &amb) {
		t.Fatalf("Heartbeat = %v, want *AmbiguousCommitError: neither its answer nor the re-read came back", err)
	}
	if rec, err := direct.Read(ctx, req.Scope); err != nil || rec.Version != 2 || c.Lease.Version != 1 {
		t.Fatalf("setup: record v%d (%v), lease v%d; want the heartbeat applied (v2) unseen by the lease (v1)",
			rec.Version, err, c.Lease.Version)
	}

	if err := via.RecordStage(ctx, c.Lease, "charge_sent"); err != nil {
		t.Errorf("RecordStage after the ambiguous heartbeat: %v, want nil: the moved version is this lease's own", err)
	}
	if err := via.Finish(ctx, c.Lease, completed(`{"paid":true}`)); err != nil {
		t.Fatalf("Finish after the ambiguous heartbeat: %v, want nil (logs %q)", err, logs.find(""))
	}
	rec, err := direct.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != idempotency.Completed || rec.LeaseOwner != c.Lease.Owner || rec.Version != c.Lease.Version {
		t.Errorf("record %s owner %q v%d, lease %q v%d; want COMPLETED by this lease, the lease following the record",
			rec.State, rec.LeaseOwner, rec.Version, c.Lease.Owner, c.Lease.Version)
	}
}
