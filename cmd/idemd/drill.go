//go:build drill

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/idemcoord/idemcoord/chaos/unsafemode"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/internal/drillpoint"
)

// errNotLoopback refuses a control address other than loopback: the
// control API has no authentication.
var errNotLoopback = errors.New("the drill control API serves on a loopback address only")

// controlCloseTimeout bounds the control server's shutdown.
const controlCloseTimeout = 2 * time.Second

// startDrill applies the drill environment to opts: with
// IDEMCOORD_DRILL_UNSAFE the store the gateway uses is put in that unsafe
// mode (an unknown mode refuses the start, naming the known ones); with
// IDEMCOORD_DRILL_CONTROL the daemon runs on a skewable clock and the
// control API (crash points, clock skew) serves on that loopback address.
// stop closes the control API and waits for its server.
func startDrill(cfg *config.Config, opts *daemon.Options, log *slog.Logger) (stop func(), err error) {
	if mode := os.Getenv(envDrillUnsafe); mode != "" {
		wrap, err := unsafemode.Wrap(mode, cfg.Region)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", envDrillUnsafe, err)
		}
		opts.UnsafeDrillStore = wrap
		log.Warn("drill build: UNSAFE mode, the coordinator is broken on purpose", "mode", mode)
	}
	addr := os.Getenv(envDrillControl)
	if addr == "" {
		return func() {}, nil
	}
	if err := checkLoopback(addr); err != nil {
		return nil, fmt.Errorf("%s=%q: %w", envDrillControl, addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envDrillControl, err)
	}
	skew := drillpoint.NewSkewClock(opts.Clock)
	opts.Clock = skew
	srv := &http.Server{Handler: drillpoint.Control(skew), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	log.Warn("drill control serving", "addr", ln.Addr().String(),
		"warning", "drill build: an armed crash point kills this process")
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), controlCloseTimeout)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-served
	}, nil
}

// checkLoopback reports whether addr (host:port) is on a loopback
// address.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return errNotLoopback
}
