package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// TestFirstRunClaimRecordIsTheStoredRecord: a first run's claim returns
// no column of the row it inserted; the record and lease Begin builds
// from the request must be exactly the stored row (times as the database
// computed and rounded them, the marker tier, the first-sent time, the
// pending state), with the database's clock and with an injected one
// that carries nanoseconds.
func TestFirstRunClaimRecordIsTheStoredRecord(t *testing.T) {
	ctx := context.Background()
	injected := clock.NewFake(time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC))
	for _, tc := range []struct {
		name  string
		clock clock.Clock
		edit  func(*store.ClaimRequest)
	}{
		{"database clock, one tier, first-sent time", nil, func(r *store.ClaimRequest) {
			r.FirstSent = time.Now().Add(-time.Minute) // nanoseconds the database rounds away
		}},
		{"injected clock, two tiers, pending", injected, func(r *store.ClaimRequest) {
			r.ReplayTTL, r.Pending, r.Lease = 2*time.Hour, true, 1500*time.Millisecond
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openStore(t, tc.clock)
			req := request(t, "tenant/alice", "first-run-key", `{"amount":1}`)
			tc.edit(&req)
			c, stored := firstRunAsStored(t, s, req)
			want := idempotency.InProgress
			if req.Pending {
				want = idempotency.Pending
			}
			l := c.Lease
			if c.Record.State != want || l.Version != stored.Version || l.Owner != stored.LeaseOwner ||
				l.OperationID != stored.OperationID || !l.ExpiresAt.Equal(stored.LeaseExpiresAt) ||
				!l.RecordExpiresAt.Equal(stored.ExpiresAt) {
				t.Errorf("lease %+v does not match the stored record %+v", l, stored)
			}
			// The lease's writes work against the stored row.
			if err := s.Finish(ctx, l, completed(`{}`)); err != nil {
				t.Fatalf("finish: %v", err)
			}
		})
	}
}

// firstRunAsStored claims req, which must be a first run, and checks that
// the record the claim answers is the one the store then reads; it
// returns the claim and the stored record.
func firstRunAsStored(t *testing.T, s *sqlstore.Store, req store.ClaimRequest) (store.Claim, store.Record) {
	t.Helper()
	ctx := context.Background()
	c, err := s.Begin(ctx, req)
	if err != nil || c.Outcome != store.FirstRun {
		t.Fatalf("begin: %v %v", c.Outcome, err)
	}
	stored, err := s.Read(ctx, req.Scope)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(stored, c.Record); d != "" {
		t.Errorf("claimed record differs from the stored one (-stored +claimed):\n%s", d)
	}
	return c, stored
}
