package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// TestCloseWaitsForRecoveredRuns: Close stops the recovery loop and waits
// for the runs it started, so a recovered task's result is recorded
// before Close returns (a rolling deploy never strands it again).
func TestCloseWaitsForRecoveredRuns(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // the resolve path: never ran
			return
		}
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"export":"done"}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	lease := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	s := storeOnClock(t, lease, 16)
	eps := endpoints(t, asyncEndpoint)

	srvA, dead := deadInstance(t, s, eps, lease.Now())
	recoveryClock := clock.NewFake(lease.Now())
	b, err := gateway.New(gateway.Config{Region: "test", Worker: "live", Store: s, Auth: verifier(t),
		Endpoints: eps, Next: gateway.NewProxy(u, nil), Recovery: gateway.RecoveryConfig{Clock: recoveryClock}})
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, b)

	alice := token(t, "alice")
	if code, h, body := do(t, post(t, srvA.URL+"/v1/things", alice, "export-close", `{}`)); code != http.StatusAccepted {
		t.Fatalf("first: %s", describe(code, h, body))
	}
	<-dead.entered
	lease.Advance(31 * time.Second)
	recoveryClock.Advance(gateway.DefaultRecoveryInterval)
	<-entered // the recovered run is at the upstream

	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	close(release)
	<-closed
	rec, err := s.Read(context.Background(), reviewScope(t, "alice", "export-close"))
	if err != nil || rec.State != idempotency.Completed {
		t.Fatalf("when Close returned: record %s (%v), want COMPLETED: Close must wait for recovered runs", rec.State, err)
	}
}
