//go:build linux

// The drills in this file run the drill build of idemd (go build -tags
// drill ./cmd/idemd) as a real process next to the shared dev cluster and
// drive it through its control API (docs/drills.md): a crash point armed
// there kills the process with SIGKILL when a request reaches it.
// drillenv_test.go has the clock skew, the unsafe mode and the refusals.

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/drillpoint"
)

// startDrillIdemd starts the drill build as one more us-east instance,
// with its control API on a free loopback port, and returns the process
// and the control API's base URL.
func startDrillIdemd(t *testing.T, worker string, po procOptions) (*idemdProc, string) {
	t.Helper()
	po.bin = idemdDrillBinary(t)
	po.env = append(po.env, "IDEMCOORD_DRILL_CONTROL=127.0.0.1:0")
	p := startIdemdWith(t, sharedCluster(t), worker, po)
	for _, line := range p.logLines() {
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(line, &l) == nil && l.Msg == "drill control serving" && l.Addr != "" {
			return p, "http://" + l.Addr
		}
	}
	t.Fatalf("the drill idemd logged no control address:\n%s", p.logTail(40))
	return nil, ""
}

// control makes one control API call and returns its status and body.
func control(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitKilled waits for the process to end and fails the test unless
// SIGKILL ended it.
func waitKilled(t *testing.T, p *idemdProc) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("idemd pid %d still running 10 s after the request reached the crash point", p.cmd.Process.Pid)
	}
	var ee *exec.ExitError
	if !errors.As(p.waitErr, &ee) {
		t.Fatalf("idemd ended with %v; want killed by SIGKILL", p.waitErr)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("idemd ended with %v; want killed by SIGKILL", p.waitErr)
	}
}

// TestDrillCrashPointKillsTheProcessWhereItIsArmed arms each crash point
// of a drill-build idemd in turn and sends it one payment: the process
// dies by SIGKILL at that point, its client gets no answer, and the store
// and the bank hold exactly what the point promises — after_claim the
// claim IN_PROGRESS under the dead worker and no charge; after_upstream
// and before_finish the charge but the record still IN_PROGRESS;
// during_commit the result COMPLETED in SQL though nobody was told. A
// retry in another region then answers the one payment (after the dead
// worker's lease for the in-progress ones) and the bank holds one charge
// (I1).
func TestDrillCrashPointKillsTheProcessWhereItIsArmed(t *testing.T) {
	c := sharedCluster(t)
	idemdDrillBinary(t) // built once for the subtests
	for _, tc := range []struct {
		point   drillpoint.Point
		state   string // the record after the kill
		charges int    // the bank's charges after the kill
	}{
		{drillpoint.AfterClaim, "IN_PROGRESS", 0},
		{drillpoint.AfterUpstream, "IN_PROGRESS", 1},
		{drillpoint.BeforeFinish, "IN_PROGRESS", 1},
		{drillpoint.DuringCommit, "COMPLETED", 1},
	} {
		t.Run(string(tc.point), func(t *testing.T) {
			proc, ctl := startDrillIdemd(t, "e2e-drill-"+string(tc.point), procOptions{})
			if status, body := control(t, ctl, http.MethodPut, "/crash/"+string(tc.point), ""); status != http.StatusOK ||
				!strings.Contains(body, `"armed":["`+string(tc.point)+`"]`) {
				t.Fatalf("arming %s: %d %s", tc.point, status, body)
			}
			actor := c.ActorHomedIn("us-east", uniqueName("drill-"+string(tc.point)))
			tok := token(t, c, actor)
			key := uniqueName("drill-key")
			body := paymentBody("17.00", "order-drill-"+string(tc.point))
			l := ledger{t, c}

			ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
			r, err := postPayment(ctx, proc.URL, tok, key, body)
			cancel()
			if err == nil {
				t.Errorf("the client of the crashed process got an answer: %v; want a broken connection", r)
			}
			waitKilled(t, proc)

			var opID string
			qctx, qcancel := context.WithTimeout(t.Context(), 5*time.Second)
			err = c.Pool.QueryRow(qctx, `SELECT operation_id::TEXT FROM idempotency_records WHERE actor_scope = $1`,
				scope(actor)).Scan(&opID)
			qcancel()
			if err != nil {
				t.Fatalf("the claim of the crashed request is not in the store: %v", err)
			}
			rec := readRecord(t, c, opID)
			if rec.State != tc.state || rec.Attempts != 1 {
				t.Errorf("record after the crash: %+v; want %s, 1 attempt", rec, tc.state)
			}
			if tc.state == "IN_PROGRESS" && (!strings.HasPrefix(rec.LeaseOwner, proc.worker+"/") || rec.LeaseLeft <= 0) {
				t.Errorf("record after the crash: %+v; want the dead worker %s's live lease", rec, proc.worker)
			}
			if rows, charges := l.byActor(scope(actor)); charges != tc.charges || rows != tc.charges {
				t.Errorf("after the crash: %d payments rows, %d bank charges; want %d and %d", rows, charges, tc.charges, tc.charges)
			}

			var final reply
			if tc.state == "IN_PROGRESS" {
				final, _ = takeoverRetries(t, c, c.Regions[1].URL, tok, key, body, opID, rec)
			} else {
				final = mustPost(t, c.Regions[1].URL, tok, key, body)
				if final.Status != http.StatusCreated || !final.replayed() {
					t.Errorf("retry after the committed finish: %v; want the stored 201 replayed", final)
				}
			}
			if final.opID() != opID {
				t.Errorf("retry answered operation %q; want %s", final.opID(), opID)
			}
			l.exactlyOnce("after the retry", opID)
			if rows, charges := l.byActor(scope(actor)); rows != 1 || charges != 1 {
				t.Errorf("after the retry: %d payments rows, %d bank charges; want 1 and 1", rows, charges)
			}
		})
	}
}

// TestDrillControlRefusesUnknownCrashPoints: the control API of a running
// drill build answers 400 naming the four known points for any other
// name, and arms nothing.
func TestDrillControlRefusesUnknownCrashPoints(t *testing.T) {
	_, ctl := startDrillIdemd(t, "e2e-drill-control", procOptions{})
	if status, body := control(t, ctl, http.MethodGet, "/healthz", ""); status != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz = %d %q; want 200 ok", status, body)
	}
	status, body := control(t, ctl, http.MethodPut, "/crash/after_claims", "")
	if status != http.StatusBadRequest {
		t.Errorf("PUT /crash/after_claims = %d %s; want 400", status, body)
	}
	for _, p := range drillpoint.Points() {
		if !strings.Contains(body, string(p)) {
			t.Errorf("400 answer %s does not name %s", body, p)
		}
	}
	if status, body := control(t, ctl, http.MethodGet, "/crash", ""); status != http.StatusOK || !strings.Contains(body, `"armed":[]`) {
		t.Errorf("GET /crash = %d %s; want nothing armed", status, body)
	}
}
