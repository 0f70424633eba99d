package sqlstore_test

import (
	"context"
	"testing"

	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestStateCheckAcceptsCancelledOnly: after migration the store's check
// constraint knows CANCELLED and still refuses a state that is none of
// the seven; migrating again changes nothing.
func TestStateCheckAcceptsCancelledOnly(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, newClock())
	if err := sqlstore.Migrate(ctx, s.Pool()); err != nil {
		t.Fatalf("second migration: %v", err)
	}
	req := request(t, "tenant/alice", "k", `{}`)
	c, err := s.Begin(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for state, ok := range map[string]bool{"CANCELLED": true, "CANCELLING": false} {
		_, err := s.Pool().Exec(ctx, `UPDATE idempotency_records SET state = $1, lease_expires_at = NULL
			WHERE operation_id = $2`, state, c.Lease.OperationID)
		if (err == nil) != ok {
			t.Errorf("state %s: %v, want accepted %v", state, err, ok)
		}
	}
}
