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

// Toxics is the drill's toxiproxy, in-process: the proxies of each
// (region, link), through which that link's connections go. A link has
// one proxy ("<region>-<link>", Add) or one per target ("<region>-<link>-
// <target>", AddTo: a region's link to each etcd member, to each other
// region); Cut, Slow, Reset and Restore act on every proxy of the link,
// CutTo and RestoreTo on one. It implements Links.
type Toxics struct {
	srv *toxiproxy.ApiServer

	mu      sync.Mutex
	proxies map[string]*toxiproxy.Proxy
	links   map[string][]string        // "<region>-<link>" -> its proxies' names
	toxics  map[string]map[string]bool // proxy -> names of the toxics on it
}

var _ Links = (*Toxics)(nil)

// NewToxics returns an empty set of proxies.
func NewToxics() *Toxics {
	return &Toxics{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop()),
		proxies: map[string]*toxiproxy.Proxy{}, links: map[string][]string{}, toxics: map[string]map[string]bool{}}
}

func proxyName(region string, link failpoint.Link) string { return region + "-" + string(link) }

// Add starts the proxy of region's link in front of upstream (host:port)
// on a free loopback port and returns the address to dial instead.
func (t *Toxics) Add(region string, link failpoint.Link, upstream string) (string, error) {
	return t.start(proxyName(region, link), proxyName(region, link), upstream)
}

// AddTo starts one more proxy of region's link, the one to target (an
// etcd member, another region), in front of upstream, and returns the
// address to dial instead. The link's faults act on all its proxies.
func (t *Toxics) AddTo(region string, link failpoint.Link, target, upstream string) (string, error) {
	return t.start(proxyName(region, link), proxyName(region, link)+"-"+target, upstream)
}

func (t *Toxics) start(link, name, upstream string) (string, error) {
	p := toxiproxy.NewProxy(t.srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return "", fmt.Errorf("cluster: proxy %s: %w", name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.proxies[name]; ok {
		old.Stop()
	} else {
		t.links[link] = append(t.links[link], name)
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

// named returns the proxies called names (one link's, or one of them).
func (t *Toxics) named(what string, names []string) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range names {
		if _, ok := t.proxies[n]; !ok {
			return nil, fmt.Errorf("cluster: no proxy for %s", what)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("cluster: no proxy for %s", what)
	}
	return names, nil
}

// of returns the names of the proxies of region's link.
func (t *Toxics) of(region string, link failpoint.Link) ([]string, error) {
	t.mu.Lock()
	names := append([]string(nil), t.links[proxyName(region, link)]...)
	t.mu.Unlock()
	return t.named(fmt.Sprintf("%s's %s link", region, link), names)
}

// add puts one toxic on each named proxy.
func (t *Toxics) add(names []string, doc string) error {
	for _, name := range names {
		t.mu.Lock()
		p := t.proxies[name]
		t.mu.Unlock()
		w, err := p.Toxics.AddToxicJson(strings.NewReader(doc))
		if err != nil {
			return fmt.Errorf("cluster: toxic on %s: %w", name, err)
		}
		t.mu.Lock()
		if t.toxics[name] == nil {
			t.toxics[name] = map[string]bool{}
		}
		t.toxics[name][w.Name] = true
		t.mu.Unlock()
	}
	return nil
}

// Cut blackholes the link both ways (a "timeout" toxic with timeout 0):
// connections stay open and nothing goes through, as in a partition.
func (t *Toxics) Cut(_ context.Context, region string, link failpoint.Link) error {
	names, err := t.of(region, link)
	if err != nil {
		return err
	}
	return t.cut(names)
}

// CutTo blackholes one proxy of region's link, the one to target (see
// AddTo): a forward from one region to another, or one etcd member.
func (t *Toxics) CutTo(_ context.Context, region string, link failpoint.Link, target string) error {
	name := proxyName(region, link) + "-" + target
	names, err := t.named(name, []string{name})
	if err != nil {
		return err
	}
	return t.cut(names)
}

func (t *Toxics) cut(names []string) error {
	for _, stream := range []string{"upstream", "downstream"} {
		doc := fmt.Sprintf(`{"name":"cut-%s","type":"timeout","stream":%q,"toxicity":1.0,"attributes":{"timeout":0}}`, stream, stream)
		if err := t.add(names, doc); err != nil {
			return err
		}
	}
	return nil
}

// Slow delays the link's answers by latency, give or take jitter.
func (t *Toxics) Slow(_ context.Context, region string, link failpoint.Link, latency, jitter time.Duration) error {
	doc := fmt.Sprintf(`{"name":"slow","type":"latency","stream":"downstream","toxicity":1.0,"attributes":{"latency":%d,"jitter":%d}}`,
		latency.Milliseconds(), jitter.Milliseconds())
	names, err := t.of(region, link)
	if err != nil {
		return err
	}
	return t.add(names, doc)
}

// Reset resets the link's connections when answers come back
// ("reset_peer" downstream): the server acted, the client hears a reset,
// which on the SQL link includes answers to COMMIT.
func (t *Toxics) Reset(_ context.Context, region string, link failpoint.Link) error {
	names, err := t.of(region, link)
	if err != nil {
		return err
	}
	return t.add(names, `{"name":"reset","type":"reset_peer","stream":"downstream","toxicity":1.0,"attributes":{"timeout":0}}`)
}

// Clean reports whether no proxy of region's link carries a toxic.
func (t *Toxics) Clean(region string, link failpoint.Link) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, name := range t.links[proxyName(region, link)] {
		if len(t.toxics[name]) > 0 {
			return false
		}
	}
	return true
}

// Restore removes every toxic from every proxy of the link.
func (t *Toxics) Restore(ctx context.Context, region string, link failpoint.Link) error {
	names, err := t.of(region, link)
	if err != nil {
		return err
	}
	return t.restore(ctx, names)
}

// RestoreTo removes every toxic from one proxy of region's link.
func (t *Toxics) RestoreTo(ctx context.Context, region string, link failpoint.Link, target string) error {
	name := proxyName(region, link) + "-" + target
	names, err := t.named(name, []string{name})
	if err != nil {
		return err
	}
	return t.restore(ctx, names)
}

func (t *Toxics) restore(ctx context.Context, names []string) error {
	for _, name := range names {
		t.mu.Lock()
		p, toxics := t.proxies[name], t.toxics[name]
		delete(t.toxics, name)
		t.mu.Unlock()
		for tx := range toxics {
			if err := p.Toxics.RemoveToxic(ctx, tx); err != nil {
				return fmt.Errorf("cluster: restore %s: %w", name, err)
			}
		}
	}
	return nil
}

// Base puts a fixed latency on the named proxy's answers (the link's
// round trip between two regions), outside the toxics a fault adds:
// Restore and Clean leave it alone.
func (t *Toxics) Base(name string, latency time.Duration) error {
	t.mu.Lock()
	p := t.proxies[name]
	t.mu.Unlock()
	if p == nil {
		return fmt.Errorf("cluster: no proxy %s", name)
	}
	doc := fmt.Sprintf(`{"name":"rtt","type":"latency","stream":"downstream","toxicity":1.0,"attributes":{"latency":%d}}`,
		latency.Milliseconds())
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(doc)); err != nil {
		return fmt.Errorf("cluster: base latency on %s: %w", name, err)
	}
	return nil
}
