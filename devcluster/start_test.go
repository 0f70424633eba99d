package devcluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/config"
)

// TestStartRefusesBusyPortsFirst: a port base whose ports are taken (by a
// first dev cluster, typically) is refused before PostgreSQL and etcd
// start, with an error that names the port and the flag that moves it.
func TestStartRefusesBusyPortsFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().(*net.TCPAddr).Port
	base := busy - 1 // the busy port is eu-west's gateway
	// A database URL that cannot be reached: if Start got as far as the
	// store, the error would be about the store, not the ports.
	_, err = Start(context.Background(), Options{PortBase: base, DatabaseURL: "postgres://nobody@127.0.0.1:1/none",
		Logger: slog.New(slog.DiscardHandler)})
	var pe *PortsBusyError
	if !errors.As(err, &pe) {
		t.Fatalf("Start on a busy port = %v, want a *PortsBusyError", err)
	}
	for _, want := range []string{strconv.Itoa(busy) + " (region eu-west)", "--port-base"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// warnings keeps the messages of WARN and ERROR records.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnings) WithGroup(string) slog.Handler      { return w }

// TestCleanStopLogsNoWarnings: stopping a healthy cluster (Ctrl-C on
// `idemd dev`) is not a failure, so it must not log one; a "liveness lease
// lost" warning on every clean stop teaches operators to ignore the real
// one. The cluster also leaves each region's config where its state says,
// as a file `idemd run --config` accepts.
func TestCleanStopLogsNoWarnings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w := &warnings{}
	c, err := Start(ctx, Options{Logger: slog.New(w)})
	if err != nil {
		t.Fatal(err)
	}
	st := c.State()
	if st.DataDir == "" || st.PostgresDir == "" || len(st.Configs) != len(Regions) {
		t.Errorf("state lacks data directories or configs: %+v", st)
	}
	for region, path := range st.Configs {
		cfg, err := config.Load(path)
		if err != nil || cfg.Region != region {
			t.Errorf("config of %s at %s: region %v, %v", region, path, cfg, err)
		}
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	if err := c.Close(cctx); err != nil {
		t.Errorf("Close: %v", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.msgs) > 0 {
		t.Errorf("a clean start and stop logged warnings: %q", w.msgs)
	}
	if _, err := os.Stat(st.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data directory %s left behind (%v)", st.DataDir, err)
	}
}
