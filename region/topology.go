package region

import (
	"errors"
	"fmt"
	"slices"

	"github.com/idemcoord/idemcoord/config"
)

// Region is one region of the deployment.
type Region struct {
	// Name is the region's name.
	Name string
	// URL is the base URL of the region's gateway.
	URL string
	// Successors is the full failover order: the configured successors,
	// then every other region in list order (wrapping around after this
	// one), each once.
	Successors []string
}

// Topology is the validated, immutable list of regions. It is safe for
// concurrent use.
type Topology struct {
	local   string
	regions []Region
	index   map[string]int
}

// ErrUnknownRegion is returned for a region name the topology lacks.
var ErrUnknownRegion = errors.New("region: unknown region")

// FromConfig builds the topology of a validated configuration. An empty
// regions list is single-region mode: the local region, served at its own
// listen address, owns every shard.
func FromConfig(c *config.Config) (*Topology, error) {
	if len(c.Regions) == 0 {
		return New(c.Region, []config.Region{{Name: c.Region, URL: "http://" + c.Listen}})
	}
	return New(c.Region, c.Regions)
}

// New builds a topology from a regions list and the local region's name.
// It checks what the topology relies on (names unique, successors known,
// local region listed); config.Validate reports the same problems with
// their YAML paths.
func New(local string, regions []config.Region) (*Topology, error) {
	t := &Topology{local: local, index: map[string]int{}}
	if len(regions) == 0 {
		return nil, errors.New("region: no regions")
	}
	for i, r := range regions {
		if r.Name == "" {
			return nil, fmt.Errorf("region: regions[%d]: empty name", i)
		}
		if _, dup := t.index[r.Name]; dup {
			return nil, fmt.Errorf("region: regions[%d]: %q listed twice", i, r.Name)
		}
		t.index[r.Name] = i
	}
	for i, r := range regions {
		order := []string{}
		for _, s := range r.Successors {
			if _, ok := t.index[s]; !ok || s == r.Name {
				return nil, fmt.Errorf("region: regions[%d]: successor %q: %w", i, s, ErrUnknownRegion)
			}
			if !slices.Contains(order, s) {
				order = append(order, s)
			}
		}
		for k := 1; k < len(regions); k++ {
			if n := regions[(i+k)%len(regions)].Name; !slices.Contains(order, n) {
				order = append(order, n)
			}
		}
		t.regions = append(t.regions, Region{Name: r.Name, URL: r.URL, Successors: order})
	}
	if _, ok := t.index[local]; !ok {
		return nil, fmt.Errorf("region: local region %q: %w", local, ErrUnknownRegion)
	}
	return t, nil
}

// Local returns the name of the region this instance runs in.
func (t *Topology) Local() string { return t.local }

// Names returns the region names in configuration order.
func (t *Topology) Names() []string {
	names := make([]string, len(t.regions))
	for i, r := range t.regions {
		names[i] = r.Name
	}
	return names
}

// Regions returns a copy of the regions in configuration order.
func (t *Topology) Regions() []Region {
	out := make([]Region, len(t.regions))
	for i, r := range t.regions {
		r.Successors = slices.Clone(r.Successors)
		out[i] = r
	}
	return out
}

// Has reports whether name is a region of the topology.
func (t *Topology) Has(name string) bool {
	_, ok := t.index[name]
	return ok
}

// Home returns the home region of a shard (shard >= 0).
func (t *Topology) Home(shard int) string { return t.regions[shard%len(t.regions)].Name }

// HomeIndex returns the index in Names of a shard's home region: the
// value CockroachDB's computed crdb_region column switches on.
func (t *Topology) HomeIndex(shard int) int { return shard % len(t.regions) }

// URL returns the gateway URL of a region.
func (t *Topology) URL(name string) (string, error) {
	i, ok := t.index[name]
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownRegion, name)
	}
	return t.regions[i].URL, nil
}

// Successors returns the failover order of a region: every other region,
// the configured successors first.
func (t *Topology) Successors(name string) ([]string, error) {
	i, ok := t.index[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownRegion, name)
	}
	return slices.Clone(t.regions[i].Successors), nil
}

// Failover returns the first region in name's successor order for which
// healthy returns true, or "" when none is (or the topology has a single
// region). A nil healthy accepts every region.
func (t *Topology) Failover(name string, healthy func(string) bool) string {
	succ, err := t.Successors(name)
	if err != nil {
		return ""
	}
	for _, s := range succ {
		if healthy == nil || healthy(s) {
			return s
		}
	}
	return ""
}
