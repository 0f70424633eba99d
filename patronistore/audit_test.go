package patronistore_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/toxitest"
	"github.com/idemcoord/idemcoord/patronistore"
	"github.com/idemcoord/idemcoord/store"
)

// proxiedDatabase creates a test database and returns a DSN reaching it
// through a toxiproxy proxy named name, and the proxy (Stop takes the
// "cluster" away; toxics freeze it).
func proxiedDatabase(t *testing.T, name string) (string, *toxiproxy.Proxy) {
	t.Helper()
	u, err := url.Parse(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := toxitest.Proxy(t, name, u.Host)
	u.Host = proxy.Listen
	return u.String(), proxy
}

// TestARegionFailoverIsAuditedWhileTheAuditClusterIsDown: the failover
// controller's audit row (no shard: the audit cluster's) is written on
// another cluster while the audit cluster cannot be reached, and found
// there. A region lost whole takes its own cluster's primary with it,
// and the default audit cluster is the first region's: before, the row
// of that region's failover was lost (region-loss-full drills audited no
// failover although the shards had moved).
func TestARegionFailoverIsAuditedWhileTheAuditClusterIsDown(t *testing.T) {
	ctx := context.Background()
	auditDSN, proxy := proxiedDatabase(t, "audit-cluster")
	clusters := openClusters(t, []string{auditDSN, pgtest.NewDatabase(t)})
	s, err := patronistore.New(clusters, 16, func(shard int) int { return shard % 2 }, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	proxy.Stop() // the audit cluster is gone: connections refused
	const detail = "region=us-east shards_moved=8 of 8"
	if err := s.Audit(ctx, "failover-controller", "region_failover", "region us-east failed", detail); err != nil {
		t.Fatalf("Audit with the audit cluster down and another up: %v", err)
	}
	rows, err := clusters[1].Store.QueryAudit(ctx, store.AuditFilter{Action: "region_failover"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Detail != detail {
		t.Fatalf("region_failover rows on the other cluster: %+v, want the one written", rows)
	}
}

// TestAnAuditRowFailsAsUnavailableWhenEveryClusterIsDown: with no cluster
// reachable, Audit fails as the store being unavailable, naming each
// cluster.
func TestAnAuditRowFailsAsUnavailableWhenEveryClusterIsDown(t *testing.T) {
	ctx := context.Background()
	var dsns []string
	var proxies []*toxiproxy.Proxy
	for _, name := range []string{"audit-a", "audit-b"} {
		dsn, p := proxiedDatabase(t, name)
		dsns = append(dsns, dsn)
		proxies = append(proxies, p)
	}
	clusters := openClusters(t, dsns)
	s, err := patronistore.New(clusters, 16, func(shard int) int { return shard % 2 }, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range proxies {
		p.Stop()
	}
	err = s.Audit(ctx, "failover-controller", "region_failover", "region us-east failed", "region=us-east shards_moved=8 of 8")
	var ce *patronistore.ClusterError
	if !errors.Is(err, store.ErrUnavailable) || !errors.As(err, &ce) {
		t.Fatalf("Audit with every cluster down = %v, want an unavailable store naming the clusters", err)
	}
}
