//go:build linux

package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/deploy/haproxy"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestDevClusterEntryKeepsServingWhileARegionIsStopped is the README's
// dev cluster walk-through: the cluster's global entry (StartEntry) takes
// a loop of payments of an eu-west actor, ap-south is stopped through the
// control endpoint's code path, and every payment before, during and
// after the stop is 201; and the SDK built from the regions list `idemd
// dev` prints reaches the same cluster.
func TestDevClusterEntryKeepsServingWhileARegionIsStopped(t *testing.T) {
	if _, err := haproxy.Binary(); err != nil {
		t.Skip(err)
	}
	c := startCluster(t, devcluster.Options{})
	logs := &testutil.LogBuffer{}
	if err := c.StartEntry(t.Context(), logs); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("haproxy log:\n%s", logs.Bytes())
		}
	})
	if st := c.State(); st.EntryURL != c.EntryURL || c.EntryURL == "" {
		t.Fatalf("state's entry %q, cluster's %q; want the same, set", st.EntryURL, c.EntryURL)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	waitUp(t, ctx, c.Entry, map[string]bool{"us-east": true, "eu-west": true, "ap-south": true})
	actor := c.ActorHomedIn("eu-west", uniqueName("dev-entry"))
	tok := token(t, c, actor)
	stopped := make(chan error, 1)
	for i := 0; i < 60; i++ {
		if i == 20 {
			go func() { stopped <- c.StopRegion(ctx, "ap-south") }()
		}
		r := mustPost(t, c.EntryURL, tok, uniqueName("dev-entry-key"), paymentBody("1.00", "loop"))
		if r.Status != http.StatusCreated {
			t.Fatalf("payment %d through the entry: %v; want 201", i, r)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	waitUp(t, ctx, c.Entry, map[string]bool{"us-east": true, "eu-west": true, "ap-south": false})
	if rows, charges := (ledger{t, c}).byActor(scope(actor)); rows != 60 || charges != 60 {
		t.Fatalf("%d payments and %d charges; want 60 and 60", rows, charges)
	}

	regions, err := client.ParseRegions(devcluster.SDKRegions(c.State()))
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := client.New(client.Config{Regions: regions, Token: tok})
	if err != nil {
		t.Fatal(err)
	}
	r, err := sdk.PostJSON(ctx, "/v1/payments", client.NewKey(), map[string]string{"amount": "2.00", "currency": "EUR", "reference": "sdk"})
	if err != nil || r.Status != http.StatusCreated || r.Header.Get("X-Idempotency-Region") != "eu-west" {
		t.Fatalf("SDK from the printed regions list = %+v, %v; want 201 from eu-west", r, err)
	}
}
