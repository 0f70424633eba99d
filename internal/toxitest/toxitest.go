// Package toxitest runs toxiproxy in-process for tests: a proxy in front
// of a real server, and a bounded connection flapper.
package toxitest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy starts a proxy named name on a free loopback port in front of
// upstream (host:port). It stops when the test ends; proxy.Listen is its
// address.
func Proxy(t testing.TB, name, upstream string) *toxiproxy.Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("toxitest: starting proxy %s: %v", name, err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Flap turns a reset_peer toxic on and off on proxy, alternating its
// direction: downstream resets lose answers after the server acted,
// upstream ones lose requests before it did. It runs at most cycles
// cycles and ends with the toxic off, so it stops by itself; stop ends it
// early.
func Flap(t testing.TB, proxy *toxiproxy.Proxy, cycles int, on, off time.Duration, stop <-chan struct{}) {
	for i := range cycles {
		stream := "downstream"
		if i%2 == 1 {
			stream = "upstream"
		}
		doc := fmt.Sprintf(`{"name":"flap","type":"reset_peer","stream":%q,"toxicity":1.0,"attributes":{"timeout":0}}`, stream)
		if _, err := proxy.Toxics.AddToxicJson(strings.NewReader(doc)); err != nil {
			t.Errorf("toxitest: adding toxic: %v", err)
			return
		}
		select {
		case <-stop:
		case <-time.After(on):
		}
		if err := proxy.Toxics.RemoveToxic(context.Background(), "flap"); err != nil {
			t.Errorf("toxitest: removing toxic: %v", err)
			return
		}
		select {
		case <-stop:
			return
		case <-time.After(off):
		}
	}
}
