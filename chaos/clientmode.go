package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/traffic"
	"github.com/idemcoord/idemcoord/deploy/haproxy"
)

// Client modes: how the drill's clients reach the cluster (Options.Client,
// `idemctl drill run --client`).
const (
	// ClientDirect, the default and the baseline: each attempt goes to one
	// region's address, the drill choosing it (and, for a share of the
	// retries, another one), as a client configured with a single region
	// would.
	ClientDirect = "direct"
	// ClientSDK: each actor uses the multi-region Go SDK with every
	// region's URL; one call is one Do, its retries, region switches and
	// breakers inside.
	ClientSDK = "sdk"
	// ClientEntry: every attempt goes through the global entry (HAProxy
	// with deploy/haproxy's configuration) started in front of the
	// cluster's regions. Needs haproxy installed.
	ClientEntry = "entry"
)

// ClientModes lists the client modes, the default first.
func ClientModes() []string { return []string{ClientDirect, ClientSDK, ClientEntry} }

// EnvEntryLog names a file that receives the global entry's HAProxy log
// in client mode entry (a line per request with the region that served
// it and its timings, and each region's check going down or up), for
// reading why an entry-mode run answered what it did. Unset: discarded.
const EnvEntryLog = "IDEMCOORD_DRILL_ENTRY_LOG"

// ErrInvalidClientMode is returned for an unknown client mode.
var ErrInvalidClientMode = errors.New("chaos: invalid client mode")

// CheckClientMode reports whether mode ("" is the default) is a client
// mode, and for ClientEntry whether haproxy is installed.
func CheckClientMode(mode string) error {
	switch mode {
	case "", ClientDirect, ClientSDK:
		return nil
	case ClientEntry:
		if _, err := haproxy.Binary(); err != nil {
			return fmt.Errorf("client mode %s needs the global entry: %w", ClientEntry, err)
		}
		return nil
	}
	return fmt.Errorf("%w: %q: must be one of %s", ErrInvalidClientMode, mode, strings.Join(ClientModes(), ", "))
}

// clientTarget returns the traffic's view of c for the client mode, and
// a function that stops what it started for it (the global entry).
func clientTarget(ctx context.Context, c cluster.Cluster, mode string) (traffic.Target, func(), error) {
	t := target(c)
	switch mode {
	case "", ClientDirect:
		return t, func() {}, nil
	case ClientSDK:
		t.SDK = true
		return t, func() {}, nil
	case ClientEntry:
		cfg := haproxy.Config{Listen: "127.0.0.1:0", UpstreamTimeout: t.UpstreamTimeout}
		for _, r := range c.Regions() {
			reg, err := haproxy.RegionFromURL(r.Name, r.URL)
			if err != nil {
				return t, nil, err
			}
			cfg.Regions = append(cfg.Regions, reg)
		}
		var logs io.WriteCloser
		if path := os.Getenv(EnvEntryLog); path != "" {
			f, err := os.Create(path)
			if err != nil {
				return t, nil, fmt.Errorf("chaos: %s: %w", EnvEntryLog, err)
			}
			logs = f
		}
		e, err := haproxy.Start(ctx, cfg, logs)
		if err != nil {
			if logs != nil {
				logs.Close()
			}
			return t, nil, fmt.Errorf("chaos: client mode %s: starting the global entry: %w", ClientEntry, err)
		}
		t.Regions = []traffic.Region{{Name: ClientEntry, URL: e.URL}}
		return t, func() {
			e.Close()
			if logs != nil {
				logs.Close()
			}
		}, nil
	}
	return t, nil, CheckClientMode(mode)
}
