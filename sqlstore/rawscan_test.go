package sqlstore_test

import (
	"context"
	"testing"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/store"
)

// TestAFirstRunReadsTheSameAnswersInBinaryAndInTextForm: the claim's
// and the fenced update's answers are read from their binary form where
// pgx asks for it (rawscan.go) and scanned as before where it does not
// (default_query_exec_mode=exec asks for text): both give the stored
// record and a lease that follows the stored row through a heartbeat and
// the finish (the batches' answers are checked in binary form by the
// group commit's tests).
func TestAFirstRunReadsTheSameAnswersInBinaryAndInTextForm(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []string{"cache_statement", "exec"} {
		t.Run(mode, func(t *testing.T) {
			dsn := pgtest.NewDatabase(t) + "&default_query_exec_mode=" + mode
			s := openDSN(t, dsn, nil)
			req := request(t, "tenant/alice", "raw-"+mode, `{"amount":1}`)
			c, _ := firstRunAsStored(t, s, req)
			l := c.Lease
			for _, step := range []func() error{
				func() error { return s.Heartbeat(ctx, l) },
				func() error { return s.Finish(ctx, l, completed(`{"id":"pay_1"}`)) },
			} {
				if err := step(); err != nil {
					t.Fatal(err)
				}
				stored, err := s.Read(ctx, req.Scope)
				if err != nil {
					t.Fatal(err)
				}
				if l.Version != stored.Version || !l.ExpiresAt.Equal(stored.LeaseExpiresAt) ||
					!l.RecordExpiresAt.Equal(stored.ExpiresAt) {
					t.Errorf("lease version %d, expiry %v, record expiry %v; stored %d, %v, %v", l.Version,
						l.ExpiresAt, l.RecordExpiresAt, stored.Version, stored.LeaseExpiresAt, stored.ExpiresAt)
				}
			}
			// A replay reads the record found through the same claim.
			again, err := s.Begin(ctx, req)
			if err != nil || again.Outcome != store.Replayed || string(again.Record.Snapshot.Body) != `{"id":"pay_1"}` {
				t.Fatalf("replay: %v %v %q", again.Outcome, err, again.Record.Snapshot.Body)
			}
		})
	}
}
