package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
	"github.com/idemcoord/idemcoord/devcluster"
)

// TestSDKCancelsAHeldPaymentAndItsRetryReplaysTheCancellation: through
// the SDK against the dev cluster, a held payment (reserved, reversible)
// is cancelled from a region that does not own the actor; the POST's
// retry under its key replays the cancellation and starts nothing; a
// second Cancel answers the same, replayed; an unknown operation is a 404
// at once.
func TestSDKCancelsAHeldPaymentAndItsRetryReplaysTheCancellation(t *testing.T) {
	c := startCluster(t, devcluster.Options{Hold: 20 * time.Second, UpstreamTimeout: 25 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tok, err := c.Token("carol", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sdk := func(base string) *client.Client {
		cl, err := client.New(client.Config{BaseURL: base, Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	// The POST's retry goes through another Client (another region), so
	// it carries the first call's first-sent time as the client package
	// says a retry beyond one Client must: a new time would make it
	// another request (422) whenever a second boundary fell between them.
	pay := client.Intent{
		Method: http.MethodPost, Path: "/v1/held-payments", Key: "sdk-cancel-1",
		Body:   []byte(`{"amount":"7.00","currency":"EUR","reference":"sdk-cancel"}`),
		Header: http.Header{client.HeaderFirstSent: {time.Now().UTC().Format(http.TimeFormat)}},
	}
	first, err := sdk(c.Regions[0].URL).Do(ctx, pay)
	if err != nil || first.Status != http.StatusAccepted || first.OperationID == "" {
		t.Fatalf("POST = %v, %v, want 202 with an operation id", first, err)
	}
	other := sdk(c.Regions[2].URL)
	got, err := other.Cancel(ctx, first.OperationID)
	if err != nil || got.Status != http.StatusOK || !strings.Contains(string(got.Body), `"CANCELLED"`) {
		t.Fatalf("Cancel = %v, %v, want 200 CANCELLED", got, err)
	}
	retry, err := sdk(c.Regions[1].URL).Do(ctx, pay)
	var p *client.ProblemError
	if !errors.As(err, &p) || retry.Status != http.StatusConflict || !retry.Replayed ||
		!strings.HasSuffix(p.Type, "/operation-cancelled") || retry.OperationID != first.OperationID {
		t.Fatalf("retry of the POST = %v, %v, want the replayed cancellation of %s", retry, err, first.OperationID)
	}
	again, err := other.Cancel(ctx, first.OperationID)
	if err != nil || again.Status != http.StatusOK || !again.Replayed {
		t.Fatalf("second Cancel = %v, %v, want 200, replayed", again, err)
	}
	if resp, err := other.Cancel(ctx, "00000000-0000-4000-8000-000000000000"); !errors.As(err, &p) || resp.Status != http.StatusNotFound {
		t.Fatalf("Cancel of an unknown operation = %v, %v, want 404", resp, err)
	}
}
