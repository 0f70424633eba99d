package devcmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/devcluster/devstate"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// freePortBase returns a port base whose cluster ports (the entry's too)
// are free now.
func freePortBase(t *testing.T) int {
	t.Helper()
	for base := 21000 + int(time.Now().UnixNano()%4000); base < 60000; base += 211 {
		if devcluster.CheckPorts(base) == nil && devcluster.CheckPorts(base+devcluster.EntryPortOffset-102) == nil {
			return base
		}
	}
	t.Fatal("no free port base")
	return 0
}

// TestTheToolsFindTheDevClusterAsSoonAsEveryGatewayIsHealthy: a script
// that starts `idemd dev`, waits until every gateway answers /healthz and
// then asks for a token (`idemctl dev token`: the state file, by port
// base) gets one at once; "no dev cluster with --port-base N is running"
// right after every gateway said healthy was the bug.
func TestTheToolsFindTheDevClusterAsSoonAsEveryGatewayIsHealthy(t *testing.T) {
	base := freePortBase(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(func(string, string) (*slog.Logger, error) { return slog.New(slog.DiscardHandler), nil })
	cmd.SetArgs([]string{"--port-base", strconv.Itoa(base)})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("idemd dev: %v", err)
		}
	})
	hc := &http.Client{Timeout: 200 * time.Millisecond}
	healthy := func(port int) bool {
		resp, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	testutil.EventuallyEvery(t, 3*time.Minute, 5*time.Millisecond, func() error {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("idemd dev ended: %v", err)
		default:
		}
		for i := range devcluster.Regions {
			if !healthy(base + i) {
				return fmt.Errorf("gateway %d not healthy yet", base+i)
			}
		}
		return nil
	})
	st, err := devstate.Find(base)
	if err != nil {
		t.Fatalf("right after every gateway answered /healthz: %v", err)
	}
	if _, err := devstate.Token(st.Secret, "alice", time.Hour); err != nil {
		t.Errorf("token: %v", err)
	}
}
