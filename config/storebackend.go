package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Store backends this package knows the shape of. Other names are left to
// the store/backend registry, which refuses one no package registered.
const (
	// DefaultStoreBackend is one DSN (package sqlstore).
	DefaultStoreBackend = "postgres"
	// PatroniStoreBackend is one Patroni cluster per home region (package
	// patronistore).
	PatroniStoreBackend = "patroni"
)

// PatroniStore is the patroni backend's configuration: the clusters, and
// the map from shards to clusters. A shard lives in the cluster whose
// Shards ranges name it; else in the cluster whose Regions name its home
// region. Its records, its fence and its queued requests all live there.
type PatroniStore struct {
	// Clusters are the Patroni clusters, at least one.
	Clusters []PatroniCluster `yaml:"clusters"`
	// AuditCluster names the cluster that keeps the audit of repairs
	// that are not about one shard (audit rows of a shard's own writes,
	// such as a fence move or a purge, go to that shard's cluster, in
	// the transaction that makes the change). Default: the first cluster.
	// While it cannot be reached, such rows go to another cluster (reads
	// merge every cluster's rows).
	AuditCluster string `yaml:"audit_cluster"`
}

// empty reports a section left out.
func (ps *PatroniStore) empty() bool { return len(ps.Clusters) == 0 && ps.AuditCluster == "" }

// PatroniCluster is one Patroni cluster of the patroni backend.
type PatroniCluster struct {
	// Name names the cluster in errors, logs and metrics: 1 to 32 of
	// [a-z0-9-], unique. Required.
	Name string `yaml:"name"`
	// DSN reaches the cluster's primary: a multi-host URL listing every
	// member with target_session_attrs=read-write (or an HAProxy address
	// that checks Patroni's /primary). Required.
	DSN string `yaml:"dsn"`
	// Regions are the home regions whose shards this cluster holds.
	// Default: the region named like the cluster, when no other cluster
	// lists it and Shards is empty. Each region belongs to at most one
	// cluster without Shards. With Shards, Regions only filter them.
	Regions []string `yaml:"regions"`
	// Shards are explicit shard ranges ("0-511", "700") this cluster
	// holds: with Regions, only the shards in them homed in those
	// regions (how one region's shards spread over several clusters and
	// stay local); without, all of them. They win over other clusters'
	// Regions, and must not overlap another cluster's.
	Shards []string `yaml:"shards"`
	// REST are the members' Patroni REST API base URLs
	// (http(s)://host:8008), one per member, any order: `idemctl store
	// status --config` asks them (GET /cluster, then GET /primary on the
	// leader) for the cluster's primary, synchronous standby, lag and
	// timeline. idemd does not use them. Optional.
	REST []string `yaml:"rest"`
}

var (
	backendRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	rangeRE   = regexp.MustCompile(`^([0-9]+)(?:-([0-9]+))?$`)
)

// ShardRange is one parsed entry of PatroniCluster.Shards: shards First
// to Last, inclusive.
type ShardRange struct{ First, Last int }

// ParseShardRange parses "N" or "N-M" (N <= M).
func ParseShardRange(s string) (ShardRange, error) {
	m := rangeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return ShardRange{}, fmt.Errorf("must be \"N\" or \"N-M\", got %q", s)
	}
	first, _ := strconv.Atoi(m[1])
	last := first
	if m[2] != "" {
		last, _ = strconv.Atoi(m[2])
	}
	if last < first {
		return ShardRange{}, fmt.Errorf("%q ends before it starts", s)
	}
	return ShardRange{First: first, Last: last}, nil
}

// checkStoreBackend validates store.backend and the fields it requires.
func (c *Config) checkStoreBackend(p *problems) {
	switch b := c.Store.Backend; {
	case b == "" || b == DefaultStoreBackend:
		if c.Store.DSN == "" {
			p.add("store.dsn", "required")
		}
		if !c.Store.Patroni.empty() {
			p.add("store.patroni", "only with store.backend: %s, got backend %q", PatroniStoreBackend, DefaultStoreBackend)
		}
	case b == PatroniStoreBackend:
		if c.Store.DSN != "" {
			p.add("store.dsn", "unused with store.backend: %s (each of store.patroni.clusters has its dsn): remove it", PatroniStoreBackend)
		}
		if c.Store.Patroni.empty() {
			p.add("store.patroni", "required with store.backend: %s", PatroniStoreBackend)
			return
		}
		c.checkPatroni(p, &c.Store.Patroni)
	case !backendRE.MatchString(b):
		p.add("store.backend", "must be %q, %q or a registered backend's name (1 to 32 of [a-z0-9_-]), got %q",
			DefaultStoreBackend, PatroniStoreBackend, b)
	}
}

// checkPatroni validates the clusters and that every shard has one.
func (c *Config) checkPatroni(p *problems, ps *PatroniStore) {
	if len(ps.Clusters) == 0 {
		p.add("store.patroni.clusters", "needs at least one cluster")
		return
	}
	names := map[string]int{}
	regionOf := map[string]int{}
	owner := map[int]int{} // shard -> cluster index, from explicit ranges
	known := map[string]bool{}
	for _, r := range c.Regions {
		known[r.Name] = true
	}
	if len(c.Regions) == 0 {
		known[c.Region] = true
	}
	home := c.homeRegions()
	for i, cl := range ps.Clusters {
		path := fmt.Sprintf("store.patroni.clusters[%d]", i)
		if !regionRE.MatchString(cl.Name) {
			p.add(path+".name", "must be 1 to 32 of [a-z0-9-], got %q", cl.Name)
		} else if j, dup := names[cl.Name]; dup {
			p.add(path+".name", "%q is already store.patroni.clusters[%d]", cl.Name, j)
		} else {
			names[cl.Name] = i
		}
		if strings.TrimSpace(cl.DSN) == "" {
			p.add(path+".dsn", "required (a multi-host URL of the cluster's members with target_session_attrs=read-write)")
		}
		seenREST := map[string]int{}
		for k, raw := range cl.REST {
			rp := fmt.Sprintf("%s.rest[%d]", path, k)
			if why := restURLProblem(raw); why != "" {
				p.add(rp, "%s, got %q", why, raw)
			} else if j, dup := seenREST[raw]; dup {
				p.add(rp, "%q is already %s.rest[%d]", raw, path, j)
			} else {
				seenREST[raw] = k
			}
		}
		for k, r := range cl.Regions {
			rp := fmt.Sprintf("%s.regions[%d]", path, k)
			switch j, dup := regionOf[r]; {
			case !known[r]:
				p.add(rp, "%q is not a region of this deployment", r)
			case len(cl.Shards) > 0:
				// A filter of the cluster's ranges, not a region it holds.
			case dup:
				p.add(rp, "%q is already held by store.patroni.clusters[%d]", r, j)
			default:
				regionOf[r] = i
			}
		}
		for k, s := range cl.Shards {
			sp := fmt.Sprintf("%s.shards[%d]", path, k)
			r, err := ParseShardRange(s)
			if err != nil {
				p.add(sp, "%v", err)
				continue
			}
			if c.Shards > 0 && r.Last >= c.Shards {
				p.add(sp, "%q names shards past the last one (%d)", s, c.Shards-1)
				continue
			}
			for n := r.First; n <= r.Last; n++ {
				if len(cl.Regions) > 0 && !slices.Contains(cl.Regions, home(n)) {
					continue
				}
				if j, dup := owner[n]; dup && j != i {
					p.add(sp, "shard %d is already held by store.patroni.clusters[%d]", n, j)
					break
				}
				owner[n] = i
			}
		}
	}
	// A cluster without regions or shards holds the region named like it.
	for i, cl := range ps.Clusters {
		if len(cl.Regions) == 0 && len(cl.Shards) == 0 {
			if _, taken := regionOf[cl.Name]; known[cl.Name] && !taken {
				regionOf[cl.Name] = i
			} else {
				p.add(fmt.Sprintf("store.patroni.clusters[%d]", i), "holds nothing: set regions or shards (no free region is named %q)", cl.Name)
			}
		}
	}
	if ps.AuditCluster != "" {
		if _, ok := names[ps.AuditCluster]; !ok {
			p.add("store.patroni.audit_cluster", "%q is not one of store.patroni.clusters", ps.AuditCluster)
		}
	}
	// Every shard needs a cluster: its range's, or its home region's.
	for n := range c.Shards {
		if _, ok := owner[n]; ok {
			continue
		}
		if _, ok := regionOf[home(n)]; !ok {
			p.add("store.patroni.clusters", "shard %d (home %q) has no cluster: list region %q in a cluster's regions, or the shard in its shards", n, home(n), home(n))
			return
		}
	}
}

// homeRegions returns each shard's home region as region.Topology.Home
// computes it (shard modulo the regions list; the local region alone in
// single-region mode).
func (c *Config) homeRegions() func(int) string {
	if len(c.Regions) == 0 {
		return func(int) string { return c.Region }
	}
	return func(n int) string { return c.Regions[n%len(c.Regions)].Name }
}

// restURLProblem says why raw is not a Patroni REST API base URL
// (http(s)://host:port), or "" when it is one.
func restURLProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Sprintf("not a URL (%v)", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http:// or https:// URL of a member's Patroni REST API, e.g. http://10.0.0.1:8008"
	case u.Host == "" || u.Hostname() == "":
		return "has no host; want e.g. http://10.0.0.1:8008"
	case u.User != nil:
		return "must not carry credentials"
	case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
		return "must be the API's base URL, without a path, query or fragment (idemctl adds /cluster and /primary)"
	}
	return ""
}
