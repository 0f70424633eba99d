package probe_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/probe"
	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestGatewayProbesProvokeAndResolveOnARealCluster drives the probes that
// go through the gateways against the in-process regional cluster: a lost
// answer is recorded as ambiguous and ends in the one run's answer; a dead
// claim is taken over (its record's attempts become 2) and ends in a 201;
// a dead claim fingerprinted unlike the gateway's endpoint is reported as
// such instead of passing for a takeover.
func TestGatewayProbesProvokeAndResolveOnARealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.StartRegional(ctx, cluster.Options{Policy: "transfer", Lease: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	store, err := sqlstore.Open(ctx, sqlstore.Config{DSN: c.DSN(), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const subject = "probe-test"
	var gws []probe.Gateway
	for _, r := range c.Regions() {
		cl, err := client.New(client.Config{BaseURL: r.URL, MaxAttempts: 1, HTTPClient: &http.Client{Timeout: 15 * time.Second},
			TokenSource: func(ctx context.Context) (string, error) { return c.Token(ctx, subject) }})
		if err != nil {
			t.Fatal(err)
		}
		gws = append(gws, probe.Gateway{Name: r.Name, Client: cl})
	}
	actor := c.Tenant() + "/" + subject
	intent := func(n int64) probe.Intent {
		ref := fmt.Sprintf("ref-probe-test-%d", n)
		return probe.Intent{Actor: actor, Shard: shard.Of(actor, shard.DefaultCount), N: n, Path: "/v1/payments",
			Key: fmt.Sprintf("probe-test-%d", n), Reference: ref,
			Body: fmt.Appendf(nil, `{"amount":"12.34","currency":"EUR","reference":%q}`, ref)}
	}
	rec := history.NewRecorder()

	last, err := probe.LostAnswer(ctx, rec, gws, intent(1))
	if err != nil || !last.Acknowledged() {
		t.Fatalf("LostAnswer = %+v, %v: want an acknowledged end", last, err)
	}
	if first := rec.History().Ops[0]; first.Error != history.ErrAfterSend || !first.Ambiguous() {
		t.Errorf("first attempt = %+v: want an ambiguous network_after_send", first)
	}

	ep := probe.GatewayEndpoint{Name: "create-payment",
		Fingerprint: idempotency.FingerprintOptions{Exclude: []string{"/client_timestamp"}}}
	last, err = probe.Takeover(ctx, store, rec, gws, ep, intent(2), time.Second)
	if err != nil || last.Status != http.StatusCreated || last.Replayed {
		t.Fatalf("Takeover = %+v, %v: want a 201 run by the takeover", last, err)
	}
	var attempts int
	if err := store.Pool().QueryRow(ctx, `SELECT attempts FROM idempotency_records WHERE operation_id = $1`,
		last.OperationID).Scan(&attempts); err != nil || attempts != 2 {
		t.Errorf("record attempts = %d (%v), want 2: the dead claim and its takeover", attempts, err)
	}

	ep.Fingerprint = idempotency.FingerprintOptions{NullEqualsMissing: true, Exclude: []string{"/amount"}}
	if _, err := probe.Takeover(ctx, store, rec, gws, ep, intent(3), time.Second); !errors.Is(err, probe.ErrFingerprintDiffers) {
		t.Errorf("Takeover with another fingerprint = %v, want ErrFingerprintDiffers", err)
	}
}
