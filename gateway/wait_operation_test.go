package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
)

// TestOperationStatusWaitsForAnAsyncRun: GET /v1/operations/{id}?wait=3s
// on an async operation whose run takes 2 s (on the gateway's clock)
// answers once it finished, with its response; ?wait=1s answers the
// running state when its second is up; a wait that is no duration or over
// the cap is 400 naming the parameter.
func TestOperationStatusWaitsForAnAsyncRun(t *testing.T) {
	for _, tc := range []struct{ wait, wantState string }{{"3s", "COMPLETED"}, {"1", "IN_PROGRESS"}} {
		t.Run("wait "+tc.wait, func(t *testing.T) {
			s, fake := clockedStore(t, 8)
			up := newHeldRun(t)
			g, srv := serveClocked(t, s, fake, "    lease: 30s\n    async: true\n", up)
			t.Cleanup(up.free)
			alice := token(t, "alice")
			acc := <-send(t, post(t, srv.URL+"/v1/things", alice, "held-1", `{}`))
			if acc.status != http.StatusAccepted {
				t.Fatalf("POST: %d %q", acc.status, acc.body)
			}
			<-up.started
			get, _ := http.NewRequest(http.MethodGet, srv.URL+acc.header.Get("Location")+"?wait="+tc.wait, nil)
			get.Header.Set("Authorization", alice)
			status := send(t, get)
			untilWaiting(t, g, 1)
			fake.Advance(2 * time.Second) // the run takes 2 s
			if tc.wantState == "IN_PROGRESS" {
				assertOperation(t, <-status, tc.wantState, 0)
				up.free()
				return
			}
			up.free()
			assertOperation(t, <-status, tc.wantState, http.StatusCreated)
		})
	}
	t.Run("invalid wait", func(t *testing.T) {
		srv := serveWrapped(t, openStore(t, 4), "    async: true\n", http.NotFoundHandler())
		for _, v := range []string{"soon", "-1s", "2m", "99999999999999"} {
			get, _ := http.NewRequest(http.MethodGet, srv.URL+"/v1/operations/0b7c1f7e-2f0a-4d7e-9a51-3f1f4f7a9c11?wait="+v, nil)
			get.Header.Set("Authorization", token(t, "alice"))
			got := <-send(t, get)
			if got.status != http.StatusBadRequest || !strings.Contains(got.body, "wait:") {
				t.Errorf("wait=%s: %d %q, want 400 naming wait", v, got.status, got.body)
			}
		}
	})
}

func assertOperation(t *testing.T, got answer, wantState string, wantStatus int) {
	t.Helper()
	var v struct {
		State  string `json:"state"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal([]byte(got.body), &v); err != nil || got.status != http.StatusOK ||
		v.State != wantState || v.Status != wantStatus {
		t.Errorf("GET operation: %d %q, want 200 state %s status %d", got.status, got.body, wantState, wantStatus)
	}
}

var _ = gateway.HeaderKey
