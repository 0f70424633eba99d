package patronistore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/retry"
	"github.com/idemcoord/idemcoord/patronistore"
)

// TestAnInstanceStaysReadyWhileOneOfItsClustersIsFrozen: readiness (Ping)
// answers from the clusters that answer and never waits for a frozen one
// (its primary paused or failing over, every statement to it held). The
// frozen cluster here holds its ping for as long as the caller's budget
// allows (an hour); a Ping that waited for it would not answer, so the
// test fails when Ping has not answered within a minute (a hang
// detector, not a latency bound: a working Ping answers at once). Before
// the fix the global entry marked every region down during one home
// region's store failover: each region's /readyz waited for the frozen
// cluster past the entry's 1 s check timeout.
func TestAnInstanceStaysReadyWhileOneOfItsClustersIsFrozen(t *testing.T) {
	frozenDSN, proxy := proxiedDatabase(t, "frozen-cluster")
	clusters := openClusters(t, []string{pgtest.NewDatabase(t), frozenDSN})
	s, err := patronistore.New(clusters, 16, func(shard int) int { return shard % 2 }, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping with both clusters up: %v", err)
	}
	// Freeze the second cluster: every byte to it is held, none answered.
	if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(`{"name":"freeze","type":"timeout","stream":"upstream","toxicity":1.0,"attributes":{"timeout":0}}`)); err != nil {
		t.Fatal(err)
	}
	ctx, done := retry.NewShare(retry.Budget{Attempts: 1, Total: time.Hour}).Call(context.Background(), time.Hour)
	defer done()
	answered := make(chan error, 1)
	go func() { answered <- s.Ping(ctx) }()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("Ping with one cluster frozen and one up = %v, want ready", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Ping did not answer while one cluster was frozen: it waits for every cluster")
	}
	if err := proxy.Toxics.RemoveToxic(context.Background(), "freeze"); err != nil {
		t.Fatal(err)
	}
}
