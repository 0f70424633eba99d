package cluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

// Toxics is the drill's toxiproxy, in-process: one proxy per (region,
// link), named "<region>-<link>", through which that link's connections
// go. It implements Links for the process-level cluster.
type Toxics struct {
	srv *toxiproxy.ApiServer

	mu      sync.Mutex
	proxies map[string]*toxiproxy.Proxy
	toxics  map[string]map[string]bool // proxy -> names of the toxics on it
}

var _ Links = (*Toxics)(nil)

// NewToxics returns an empty set of proxies.
func NewToxics() *Toxics {
	return &Toxics{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop()),
		proxies: map[string]*toxiproxy.Proxy{}, toxics: map[string]map[string]bool{}}
}

func proxyName(region string, link failpoint.Link) string { return region + "-" + string(link) }

// Add starts the proxy of region's link in front of upstream (host:port)
// on a free loopback port and returns the address to dial instead.
func (t *Toxics) Add(region string, link failpoint.Link, upstream string) (string, error) {
	name := proxyName(region, link)
	p := toxiproxy.NewProxy(t.srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("cluster: proxy %s: %w", name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.proxies[name]; ok {
		old.Stop()
	}
	t.proxies[name] = p
	return p.Listen, nil
}

// Close stops every proxy.
func (t *Toxics) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, p := range t.proxies {
		p.Stop()
		delete(t.proxies, name)
	}
}

func (t *Toxics) proxy(region string, link failpoint.Link) (*toxiproxy.Proxy, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.proxies[proxyName(region, link)]
	if !ok {
		return nil, fmt.Errorf("cluster: no proxy for %s's %s link", region, link)
	}
	return p, nil
}

// add puts one toxic on a proxy.
func (t *Toxics) add(region string, link failpoint.Link, doc string) error {
	p, err := t.proxy(region, link)
	if err != nil {
		return err
	}
	w, err := p.Toxics.AddToxicJson(strings.NewReader(doc))
	if err != nil {
		return fmt.Errorf("cluster: toxic on %s: %w", proxyName(region, link), err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name := proxyName(region, link)
	if t.toxics[name] == nil {
		t.toxics[name] = map[string]bool{}
	}
	t.toxics[name][w.Name] = true
	return nil
}

// Cut blackholes the link both ways (a "timeout" toxic with timeout 0):
// connections stay open and nothing goes through, as in a partition.
func (t *Toxics) Cut(_ context.Context, region string, link failpoint.Link) error {
	for _, stream := range []string{"upstream", "downstream"} {
		doc := fmt.Sprintf(`{"name":"cut-%s","type":"timeout","stream":%q,"toxicity":1.0,"attributes":{"timeout":0}}`, stream, stream)
		if err := t.add(region, link, doc); err != nil {
			return err
		}
	}
	return nil
}

// Slow delays the link's answers by latency, give or take jitter.
func (t *Toxics) Slow(_ context.Context, region string, link failpoint.Link, latency, jitter time.Duration) error {
	doc := fmt.Sprintf(`{"name":"slow","type":"latency","stream":"downstream","toxicity":1.0,"attributes":{"latency":%d,"jitter":%d}}`,
		latency.Milliseconds(), jitter.Milliseconds())
	return t.add(region, link, doc)
}

// Reset resets the link's connections when answers come back
// ("reset_peer" downstream): the server acted, the client hears a reset,
// which on the SQL link includes answers to COMMIT.
func (t *Toxics) Reset(_ context.Context, region string, link failpoint.Link) error {
	return t.add(region, link, `{"name":"reset","type":"reset_peer","stream":"downstream","toxicity":1.0,"attributes":{"timeout":0}}`)
}

// Restore removes every toxic from the link.
func (t *Toxics) Restore(ctx context.Context, region string, link failpoint.Link) error {
	p, err := t.proxy(region, link)
	if err != nil {
		return err
	}
	name := proxyName(region, link)
	t.mu.Lock()
	names := t.toxics[name]
	delete(t.toxics, name)
	t.mu.Unlock()
	for tx := range names {
		if err := p.Toxics.RemoveToxic(ctx, tx); err != nil {
			return fmt.Errorf("cluster: restore %s: %w", name, err)
		}
	}
	return nil
}
