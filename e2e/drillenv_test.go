//go:build linux

// The drills in this file run the drill build of idemd against its
// environment: the clock skew seen through the gateway, the unsafe mode,
// and what each build refuses (see drillbuild_test.go for the harness).

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/drillpoint"
)

// TestDrillClockSkewMovesTheGatewaysClock skews a drill-build idemd's
// clock through PUT /clock/skew and sees its gateway act on the skewed
// time: the actor's replay limit (1 an hour) is spent, the next replay is
// 429, and after the clock is moved two hours ahead the bucket has
// refilled (the limiter reads the daemon's injected clock) and the replay
// is served. GET /clock/skew reports the offset and the skewed Now.
func TestDrillClockSkewMovesTheGatewaysClock(t *testing.T) {
	c := sharedCluster(t)
	limit := func(cfg []byte) []byte {
		at := []byte("    resolve_path:")
		if !bytes.Contains(cfg, at) {
			t.Fatal("procConfig has no resolve_path line to add the limit before")
		}
		return bytes.Replace(cfg, at, append([]byte("    limit: {rate: 1/h}\n"), at...), 1)
	}
	proc, ctl := startDrillIdemd(t, "e2e-drill-skew", procOptions{editConfig: limit})
	actor := c.ActorHomedIn("us-east", uniqueName("drill-skew"))
	tok := token(t, c, actor)
	key := uniqueName("drill-skew-key")
	body := paymentBody("3.00", "order-drill-skew")

	if r := mustPost(t, proc.URL, tok, key, body); r.Status != http.StatusCreated || r.replayed() {
		t.Fatalf("first run: %v; want 201", r)
	}
	if r := mustPost(t, proc.URL, tok, key, body); r.Status != http.StatusCreated || !r.replayed() {
		t.Fatalf("first replay: %v; want the 201 replayed (the bucket's one token)", r)
	}
	if r := mustPost(t, proc.URL, tok, key, body); r.Status != http.StatusTooManyRequests {
		t.Fatalf("second replay within the hour: %v; want 429", r)
	}

	type skew struct {
		Offset string    `json:"offset"`
		Now    time.Time `json:"now"`
	}
	before := time.Now()
	status, out := control(t, ctl, http.MethodPut, "/clock/skew", `{"offset":"2h"}`)
	after := time.Now()
	var s skew
	if err := json.Unmarshal([]byte(out), &s); err != nil || status != http.StatusOK || s.Offset != "2h0m0s" ||
		s.Now.Before(before.Add(2*time.Hour)) || s.Now.After(after.Add(2*time.Hour)) {
		t.Fatalf("PUT /clock/skew 2h = %d %s (%v); want offset 2h0m0s and now in [%v, %v]", status, out, err,
			before.Add(2*time.Hour), after.Add(2*time.Hour))
	}
	if r := mustPost(t, proc.URL, tok, key, body); r.Status != http.StatusCreated || !r.replayed() {
		t.Errorf("replay with the clock 2 h ahead: %v; want the 201 replayed (the bucket refilled on the skewed clock)", r)
	}
	if status, out := control(t, ctl, http.MethodPut, "/clock/skew", `{"offset":"0s"}`); status != http.StatusOK {
		t.Errorf("PUT /clock/skew 0s = %d %s", status, out)
	}
	if status, out := control(t, ctl, http.MethodGet, "/clock/skew", ""); status != http.StatusOK ||
		json.Unmarshal([]byte(out), &s) != nil || s.Offset != "0s" {
		t.Errorf("GET /clock/skew after undoing = %d %s; want offset 0s", status, out)
	}
}

// runRefused runs `bin run` on a valid configuration with env added and
// returns its stderr; it fails the test unless the process exits 1
// before serving.
func runRefused(t *testing.T, bin string, env ...string) string {
	t.Helper()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "idemd.yaml")
	if err := os.WriteFile(cfgFile, []byte(config.Example), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), procStartTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", cfgFile)
	cmd.Env = append(os.Environ(), append([]string{"IDEMD_HS256_SECRET=" + strings.Repeat("s", 32)}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("idemd run with %q: %v; want exit status 1\n%s", env, err, stderr.String())
	}
	return stderr.String()
}

// TestDrillEnvironmentRefusals: an idemd refuses to start with a drill
// environment it cannot honour, saying why, instead of running without
// the faults (or the safety) a drill expects. Each subtest keeps the name
// of the test it was:
//
//   - TestNormalBuildRefusesTheDrillEnvironment: a build without -tags
//     drill refuses either drill variable;
//   - TestDrillBuildRefusesAnUnknownUnsafeMode: the drill build refuses an
//     unsafe mode it does not know, naming the known ones, and a control
//     address off loopback (the API has no auth).
func TestDrillEnvironmentRefusals(t *testing.T) {
	type refusal struct {
		env  string
		want []string // in stderr
	}
	tests := []struct {
		name     string
		binary   func(*testing.T) string
		refusals []refusal
	}{
		{"TestNormalBuildRefusesTheDrillEnvironment", idemdBinary, []refusal{
			{"IDEMCOORD_DRILL_CONTROL=127.0.0.1:0", []string{"IDEMCOORD_DRILL_CONTROL is set but this idemd was built without -tags drill"}},
			{"IDEMCOORD_DRILL_UNSAFE=" + cluster.UnsafeRegionLocalClaims,
				[]string{"IDEMCOORD_DRILL_UNSAFE is set but this idemd was built without -tags drill"}},
		}},
		{"TestDrillBuildRefusesAnUnknownUnsafeMode", idemdDrillBinary, []refusal{
			{"IDEMCOORD_DRILL_UNSAFE=region-local-claim",
				append([]string{"IDEMCOORD_DRILL_UNSAFE", `"region-local-claim"`}, cluster.UnsafeModes()...)},
			{"IDEMCOORD_DRILL_CONTROL=0.0.0.0:0", []string{"loopback"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := tt.binary(t)
			for _, r := range tt.refusals {
				stderr := runRefused(t, bin, r.env)
				for _, want := range r.want {
					if !strings.Contains(stderr, want) {
						t.Errorf("with %s: stderr %q lacks %q", r.env, stderr, want)
					}
				}
			}
		})
	}
}

// TestDrillBuildUnsafeModeBreaksTheCoordinatorOnPurpose: a drill build
// started with IDEMCOORD_DRILL_UNSAFE=region-local-claims claims keys in
// its region's own space, so the same key sent to a safe instance of the
// same region is a first run again: two operations for one intent, the
// duplicate the drills' checker must catch. (A normal build refuses the
// variable: TestDrillEnvironmentRefusals.)
func TestDrillBuildUnsafeModeBreaksTheCoordinatorOnPurpose(t *testing.T) {
	c := sharedCluster(t)
	proc, _ := startDrillIdemd(t, "e2e-drill-unsafe", procOptions{
		env: []string{"IDEMCOORD_DRILL_UNSAFE=" + cluster.UnsafeRegionLocalClaims}})
	actor := c.ActorHomedIn("us-east", uniqueName("drill-unsafe"))
	tok := token(t, c, actor)
	key := uniqueName("drill-unsafe-key")
	body := paymentBody("5.00", "order-drill-unsafe")

	if c.Regions[0].Name != "us-east" {
		t.Fatalf("the cluster's first region is %s; want us-east", c.Regions[0].Name)
	}
	first := mustPost(t, proc.URL, tok, key, body)
	again := mustPost(t, c.Regions[0].URL, tok, key, body) // us-east's safe in-process instance
	if first.Status != http.StatusCreated || again.Status != http.StatusCreated {
		t.Fatalf("unsafe then safe: %v, %v; want two 201s", first, again)
	}
	if again.replayed() || again.opID() == first.opID() {
		t.Errorf("the safe instance replayed operation %s of the unsafe one; want a second first run (unsafe mode not applied)",
			first.opID())
	}
	var records int
	qctx, qcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer qcancel()
	if err := c.Pool.QueryRow(qctx, `SELECT count(*) FROM idempotency_records WHERE actor_scope = $1`,
		scope(actor)).Scan(&records); err != nil || records != 2 {
		t.Errorf("records of the actor's one key: %d (%v); want 2, one per claim space", records, err)
	}
}

// TestNormalBuildCarriesNoDrillCode: the binary built without the tag
// holds none of the drill build's code — no crash point name, no control
// server, no unsafe mode — while the drill build holds all three (so the
// search is known to find them).
func TestNormalBuildCarriesNoDrillCode(t *testing.T) {
	marks := []string{string(drillpoint.DuringCommit), "drill control serving", cluster.UnsafeRegionLocalClaims}
	for _, b := range []struct {
		path  string
		drill bool
	}{{idemdBinary(t), false}, {idemdDrillBinary(t), true}} {
		bin, err := os.ReadFile(b.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range marks {
			if got := bytes.Contains(bin, []byte(m)); got != b.drill {
				t.Errorf("%s contains %q: %v; want %v", filepath.Base(b.path), m, got, b.drill)
			}
		}
	}
}
