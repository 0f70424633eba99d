package devcluster

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/patronilocal"
)

// TestStoreHAStartsAPatroniClusterPerHomeRegionAndServesFromIt: with
// Store StoreHA the dev cluster runs one Patroni cluster per region whose
// first primary is in its home region and whose synchronous standby is in
// another, the state file lists them for idemctl, and a payment is
// answered with its record in the replicated store.
func TestStoreHAStartsAPatroniClusterPerHomeRegionAndServesFromIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Store: StoreHA, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	st := c.State()
	if st.Store != StoreHA || len(st.StoreClusters) != len(Regions) {
		t.Fatalf("state store %q with %d clusters, want %q with %d", st.Store, len(st.StoreClusters), StoreHA, len(Regions))
	}
	for i, sc := range st.StoreClusters {
		ms, err := patronilocal.ReadStatus(ctx, sc.REST)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]patronilocal.MemberStatus{}
		for _, m := range ms {
			roles[m.Role] = m
		}
		if sc.Name != Regions[i] || roles[patronilocal.RoleLeader].Region != Regions[i] {
			t.Errorf("cluster %s: leader %+v, want one in region %s", sc.Name, roles[patronilocal.RoleLeader], Regions[i])
		}
		if s, ok := roles[patronilocal.RoleSyncStandby]; !ok || s.Region == Regions[i] {
			t.Errorf("cluster %s: sync standby %+v, want one in another region", sc.Name, s)
		}
	}
	if st.DSN != st.StoreClusters[0].DSN || !strings.Contains(st.DSN, "target_session_attrs=read-write") {
		t.Errorf("regions use %q, want the first cluster's multi-host DSN %q", st.DSN, st.StoreClusters[0].DSN)
	}
	tok, err := c.Token("ha-probe", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.Regions[0].URL+"/v1/payments",
		strings.NewReader(`{"amount":"1.00","currency":"EUR","reference":"ha-1"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", "ha-1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("payment answered %d, want 201", resp.StatusCode)
	}
	// The record is on the first cluster's synchronous standby: the
	// commit waited for it (replay follows within moments).
	ms, err := c.Stores[0].Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Role != patronilocal.RoleSyncStandby {
			continue
		}
		dsn, _ := c.Stores[0].MemberDSN(m.Name)
		var n int
		for deadline := time.Now().Add(30 * time.Second); n == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if conn, err := pgx.Connect(ctx, dsn); err == nil {
				conn.QueryRow(ctx, `SELECT count(*) FROM idempotency_records`).Scan(&n)
				conn.Close(ctx)
			}
		}
		if n == 0 {
			t.Errorf("sync standby %s of %s has no idempotency record", m.Name, c.Stores[0].Scope())
		}
	}
}
