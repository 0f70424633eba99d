package config

import (
	"fmt"
	"slices"
)

// Routing modes: what a gateway does with a request for an actor that
// another region owns.
const (
	// RoutingForward sends the request once to the owner region's gateway
	// and relays its answer (the default: clients need no redirect logic).
	RoutingForward = "forward"
	// RoutingRedirect answers 307 with the owner region's URL.
	RoutingRedirect = "redirect"
)

// MaxShards bounds the shard count: one etcd key and one fence row per
// shard, and etcd is comfortable with a few thousand small keys.
const MaxShards = 65536

// Region is one entry of the regions list: a region of the deployment.
type Region struct {
	// Name is the region's name, as in Config.Region: 1 to 32 of
	// [a-z0-9-]. Required, unique.
	Name string `yaml:"name"`
	// URL is the absolute http(s) base URL of the region's gateway, used
	// to forward requests to the owner region. Required.
	URL string `yaml:"url"`
	// Successors is the failover order: when this region is lost, its
	// shards move to the first listed region that is healthy. Default:
	// the regions after this one in list order, wrapping around. Every
	// entry must name another listed region.
	Successors []string `yaml:"successors"`
}

// checkRegions validates Regions, Shards and Routing. An empty regions
// list is single-region mode: the local region alone owns every shard.
func (c *Config) checkRegions(p *problems) {
	if c.Shards <= 0 || c.Shards > MaxShards {
		p.add("shards", "must be within 1 and %d, got %d; it is fixed when the directory is bootstrapped", MaxShards, c.Shards)
	}
	switch c.Routing {
	case RoutingForward, RoutingRedirect:
	default:
		p.add("routing", "must be %q or %q, got %q", RoutingForward, RoutingRedirect, c.Routing)
	}
	if len(c.Regions) == 0 {
		return
	}
	seen := map[string]int{}
	for i, r := range c.Regions {
		path := fmt.Sprintf("regions[%d]", i)
		if !regionRE.MatchString(r.Name) {
			p.add(path+".name", "must be 1 to 32 of [a-z0-9-], got %q", r.Name)
		} else if j, dup := seen[r.Name]; dup {
			p.add(path+".name", "%q is already regions[%d]", r.Name, j)
		} else {
			seen[r.Name] = i
		}
		if r.URL == "" {
			p.add(path+".url", "required: other regions forward requests for this region's actors to it")
		} else {
			checkURL(p, path+".url", r.URL, true)
		}
	}
	for i, r := range c.Regions {
		for j, s := range r.Successors {
			spath := fmt.Sprintf("regions[%d].successors[%d]", i, j)
			switch _, ok := seen[s]; {
			case !ok:
				p.add(spath, "unknown region %q; successors must be listed in regions", s)
			case s == r.Name:
				p.add(spath, "a region cannot be its own successor")
			case slices.Index(r.Successors, s) != j:
				p.add(spath, "%q is listed twice", s)
			}
		}
	}
	if _, ok := seen[c.Region]; !ok && regionRE.MatchString(c.Region) {
		p.add("regions", "the local region %q is missing from the list", c.Region)
	}
}
