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
// first primary is in its home region and whose members in the two
// other regions are its quorum standbys (quorum commit), the state file lists them for idemctl, and each region's
// payments have their records in their home region's cluster only
// (store.backend patroni routes each shard there).
func TestStoreHAStartsAPatroniClusterPerHomeRegionAndServesFromIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
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
		if err := c.Stores[i].WaitSynced(ctx, 1); err != nil {
			t.Fatal(err)
		}
		ms, err := patronilocal.ReadStatus(ctx, sc.REST)
		if err != nil {
			t.Fatal(err)
		}
		roles := map[string]patronilocal.MemberStatus{}
		var quorum []patronilocal.MemberStatus
		for _, m := range ms {
			roles[m.Role] = m
			if m.Role == patronilocal.RoleQuorumStandby && m.Region != Regions[i] {
				quorum = append(quorum, m)
			}
		}
		if sc.Name != Regions[i] || roles[patronilocal.RoleLeader].Region != Regions[i] {
			t.Errorf("cluster %s: leader %+v, want one in region %s", sc.Name, roles[patronilocal.RoleLeader], Regions[i])
		}
		if len(quorum) != len(Regions)-1 {
			t.Errorf("cluster %s: members %+v, want the %d in other regions quorum standbys (quorum commit)", sc.Name, ms, len(Regions)-1)
		}
	}
	if !strings.Contains(st.DSN, "target_session_attrs=read-write") {
		t.Errorf("state DSN %q, want a multi-host DSN that connects to the primary", st.DSN)
	}
	// A payment of an actor homed in each region, sent to that region:
	// its record is in its home region's cluster, on the primary and on
	// the synchronous standby (the commit waited for it), and in no other
	// cluster.
	for i, home := range Regions {
		actor := c.ActorHomedIn(home, "ha")
		pay(t, ctx, c, c.Regions[i].URL, actor)
		scope := Tenant + "/" + actor
		for j, sc := range c.Stores {
			ms, err := sc.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.Role != patronilocal.RoleLeader && m.Role != patronilocal.RoleQuorumStandby {
					continue
				}
				dsn, _ := sc.MemberDSN(m.Name)
				n := records(ctx, dsn, scope, i == j)
				if want := i == j; (n > 0) != want {
					t.Errorf("actor homed in %s: cluster %s member %s (%s) has %d records of it, want them only in cluster %s",
						home, sc.Scope(), m.Name, m.Role, n, home)
				}
			}
		}
	}
}

// pay sends one payment of actor to the region at url and wants 201.
func pay(t *testing.T, ctx context.Context, c *Cluster, url, actor string) {
	t.Helper()
	tok, err := c.Token(actor, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/payments",
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
		t.Fatalf("payment of %s answered %d, want 201", actor, resp.StatusCode)
	}
}

// records counts scope's idempotency records on the member behind dsn;
// when some are expected it waits (bounded) for a standby to replay them.
func records(ctx context.Context, dsn, scope string, expect bool) int {
	var n int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			conn.QueryRow(ctx, `SELECT count(*) FROM idempotency_records WHERE actor_scope = $1`, scope).Scan(&n)
			conn.Close(ctx)
		}
		if n > 0 || !expect || time.Now().After(deadline) {
			return n
		}
	}
}
