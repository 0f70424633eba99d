package e2e

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/failover"
)

// Bounds every test shares.
const (
	// startTimeout bounds a cluster's start: PostgreSQL's initdb and three
	// etcd members take 3-5 s on a small machine, ten times that under
	// -race on a busy one would be a hang.
	startTimeout = 60 * time.Second
	// closeTimeout bounds a cluster's shutdown.
	closeTimeout = 20 * time.Second
)

// shared is the cluster of the tests that do not interfere with each
// other: they use their own actors and keys, and run one after the other
// (none of them calls t.Parallel), so totals they compare stay theirs.
// Tests that stop PostgreSQL, set bank faults or need their own options
// start their own cluster and run in parallel with each other.
var shared struct {
	once     sync.Once
	c        *devcluster.Cluster
	upstream *upstreamCounter
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		shared.c.Close(ctx)
		cancel()
	}
	os.Exit(code)
}

// sharedConfirmDelay is the shared cluster's failover confirmation delay.
const sharedConfirmDelay = 5 * time.Second

// sharedCluster starts the shared cluster on first use.
func sharedCluster(t *testing.T) *devcluster.Cluster {
	t.Helper()
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		start := time.Now()
		shared.upstream = newUpstreamCounter()
		// No test of the shared cluster stops a region, so it confirms a
		// lost liveness key only after 5 s instead of 500 ms: a region
		// starved of CPU for a few seconds on a loaded test machine is
		// not failed over under the other tests' feet.
		shared.c, shared.err = devcluster.Start(ctx, devcluster.Options{PortBase: 0, Logger: testLogger(),
			Transport: shared.upstream, FailoverTimings: failover.Config{ConfirmDelay: sharedConfirmDelay}})
		if shared.err == nil {
			t.Logf("shared cluster started in %v", time.Since(start).Round(time.Millisecond))
		}
	})
	if shared.err != nil {
		t.Fatalf("starting the shared cluster: %v", shared.err)
	}
	return shared.c
}

// startCluster starts a cluster of the test's own, closed when it ends.
// PortBase is always 0: free loopback ports.
func startCluster(t *testing.T, opts devcluster.Options) *devcluster.Cluster {
	t.Helper()
	opts.PortBase = 0
	if opts.FailoverTimings.HoldTime == 0 {
		// A region a test brings back must be healthy again well within
		// failBack's deadline: the default hold (30 s) equals it.
		opts.FailoverTimings.HoldTime = e2eHoldTime
	}
	if opts.Logger == nil {
		opts.Logger = testLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	start := time.Now()
	c, err := devcluster.Start(ctx, opts)
	if err != nil {
		t.Fatalf("starting a cluster: %v", err)
	}
	t.Logf("cluster started in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		start := time.Now()
		if err := c.Close(ctx); err != nil {
			t.Logf("closing the cluster: %v", err)
		}
		t.Logf("cluster closed in %v", time.Since(start).Round(time.Millisecond))
	})
	return c
}

// testLogger discards the clusters' logs unless IDEMCOORD_E2E_LOG names a
// level, in which case they go to stderr as text.
func testLogger() *slog.Logger {
	var level slog.Level
	switch strings.ToLower(os.Getenv("IDEMCOORD_E2E_LOG")) {
	case "":
		return slog.New(slog.DiscardHandler)
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn":
		level = slog.LevelWarn
	default:
		level = slog.LevelError
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
