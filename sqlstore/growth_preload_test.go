package sqlstore_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestGrowthPreloadLooksLikeRecentTraffic: the growth benchmark's
// preloaded records have operation ids made as the store makes them
// (version 7, carrying the record's creation time, so they sort as the
// records were created), and the records in flight under a live lease
// were all created in the last growthInFlight, as in-flight work is.
func TestGrowthPreloadLooksLikeRecentTraffic(t *testing.T) {
	ctx := context.Background()
	const n = 5000
	s, err := sqlstore.Open(ctx, sqlstore.Config{Migrate: true, DSN: growthServer(t, "128MB")(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var sb string
	if err := s.Pool().QueryRow(ctx, "SHOW shared_buffers").Scan(&sb); err != nil {
		t.Fatal(err)
	}
	if sb != "128MB" {
		t.Errorf("growth server's shared_buffers = %s, want 128MB", sb)
	}
	base := request(t, "tenant/g0", "k", `{}`)
	loadGrowth(t, s, n, base.Fingerprint.Sum[:], base.Fingerprint.Version, io.Discard)
	rows, err := s.Pool().Query(ctx, `SELECT operation_id, created_at, state, lease_expires_at > now()
		FROM idempotency_records ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var prev uuid.UUID
	var newest time.Time
	type rec struct {
		created time.Time
		live    bool
	}
	var inFlight []rec
	for i := 0; rows.Next(); i++ {
		var id uuid.UUID
		var created time.Time
		var state string
		var live *bool
		if err := rows.Scan(&id, &created, &state, &live); err != nil {
			t.Fatal(err)
		}
		if id.Version() != 7 {
			t.Fatalf("operation id %s is version %d, want 7", id, id.Version())
		}
		if sec, nsec := id.Time().UnixTime(); time.Unix(sec, nsec).UnixMilli() != created.UnixMilli() {
			t.Fatalf("operation id %s says %s, its record was created at %s", id, time.Unix(sec, nsec), created)
		}
		if i > 0 && string(prev[:]) >= string(id[:]) {
			t.Fatalf("operation ids do not sort by creation: %s then %s", prev, id)
		}
		prev, newest = id, created
		if state == "IN_PROGRESS" {
			inFlight = append(inFlight, rec{created, live != nil && *live})
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	if len(inFlight) == 0 {
		t.Fatal("no record in flight")
	}
	for _, r := range inFlight {
		if age := newest.Sub(r.created); age >= growthInFlight || !r.live {
			t.Errorf("record in flight created %s before the newest, live lease %v: want within %s, live", age, r.live, growthInFlight)
		}
	}
}
