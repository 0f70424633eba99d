package chaos_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/scenario"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

// naive is a "coordinator" that does not deduplicate: every attempt gets
// a fresh operation id and goes straight to the payments service, as a
// gateway whose claim admitted everyone would.
type naive struct {
	region, upstream string
}

func (n naive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, n.upstream+r.URL.Path, bytes.NewReader(body))
	op := uuid.NewString()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Idempotency-Operation-Id", op)
	req.Header.Set("X-Idempotency-Actor", scopeOf(r))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("X-Idempotency-Region", n.region)
	w.Header().Set("X-Idempotency-Operation-Id", op)
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// scopeOf reads tenant/subject from the bearer token without verifying it.
func scopeOf(r *http.Request) string {
	parts := strings.Split(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), ".")
	var c struct {
		Sub    string `json:"sub"`
		Tenant string `json:"tenant"`
	}
	if len(parts) == 3 {
		b, _ := base64.RawURLEncoding.DecodeString(parts[1])
		json.Unmarshal(b, &c)
	}
	return c.Tenant + "/" + c.Sub
}

// naiveCluster is the dev cluster with naive gateways in front.
type naiveCluster struct {
	*cluster.Dev
	regions []cluster.Region
}

func (n naiveCluster) Regions() []cluster.Region { return n.regions }

// TestCheckerCatchesACoordinatorThatDoesNotDeduplicate runs the same
// pipeline with the coordinator replaced by a pass-through: the checker,
// from the history, the store and the ledger, must report the second
// payments and charges, the changed bodies that were accepted and the
// acknowledgements the store never recorded. It must in every client
// mode: with the multi-region SDK (whose own retries and region switches
// happen inside one call) as with the direct baseline.
func TestCheckerCatchesACoordinatorThatDoesNotDeduplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	for _, mode := range []string{chaos.ClientDirect, chaos.ClientSDK} {
		t.Run(mode, func(t *testing.T) { checkCatchesNaive(t, mode) })
	}
}

func checkCatchesNaive(t *testing.T, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sc, err := scenario.Parse([]byte(smoke))
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.StartDev(ctx, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(context.Background())
	dev := c.(*cluster.Dev)
	nc := naiveCluster{Dev: dev}
	for _, r := range dev.Regions() {
		srv := httptest.NewServer(naive{region: r.Name, upstream: dev.Upstream()})
		defer srv.Close()
		nc.regions = append(nc.regions, cluster.Region{Name: r.Name, URL: srv.URL})
	}
	res, err := chaos.Run(ctx, sc, 1, nc, chaos.Options{Validate: validate.Options{AllowUnownedShards: true}, Client: mode})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	res.Report.WriteText(&text)
	t.Logf("summary:\n%.3000s", text.String())
	if err := res.Err(); !errors.Is(err, chaos.ErrViolations) {
		t.Fatalf("Err() = %v, want ErrViolations", err)
	}
	for _, inv := range []validate.Invariant{validate.I1, validate.I5, validate.I7} {
		if len(res.Verdict.Of(inv)) == 0 {
			t.Errorf("no %s violation reported", inv)
		}
	}
	if res.Report.Duplicates == 0 || !strings.Contains(text.String(), "VIOLATION seed=1 I1") {
		t.Errorf("the summary does not show the duplicates with the seed")
	}
}
