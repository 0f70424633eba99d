package config

import (
	"fmt"
	"strings"

	"github.com/idemcoord/idemcoord/idempotency"
)

// ReplayMode says what a replay of a finished operation answers with.
type ReplayMode string

// Replay modes.
const (
	// ReplaySnapshot answers with the stored status, allow-listed headers
	// and body. The default.
	ReplaySnapshot ReplayMode = "snapshot"
	// ReplayReference stores the status, the resource id and the Keep
	// fields, and answers a replay with the resource as the upstream
	// shows it now (GET ResourcePath under the replaying caller's own
	// authorization); a resource gone is a resource-gone problem, never
	// a second creation.
	ReplayReference ReplayMode = "reference"
)

// ResourceIDParam is the placeholder of Replay.ResourcePath replaced by
// the resource id (the last segment of the first answer's Location).
const ResourceIDParam = "{resource_id}"

// Replay configures how an endpoint's finished operations are replayed.
type Replay struct {
	// Mode is "snapshot" (default) or "reference".
	Mode ReplayMode `yaml:"mode"`
	// ResourcePath is the upstream path a reference replay reads, with
	// {resource_id}: "/v1/things/{resource_id}". Required for reference.
	ResourcePath string `yaml:"resource_path"`
	// Keep are RFC 6901 pointers of stable response fields (an id, an
	// amount) kept when the body is not stored whole: always in reference
	// mode, and in snapshot mode when the body is over max_response_bytes.
	Keep []string `yaml:"keep"`
}

// Reference reports whether replays re-read the resource.
func (r Replay) Reference() bool { return r.Mode == ReplayReference }

// checkReplay validates an endpoint's replay settings, reported under at.
func (e Endpoint) checkReplay(p *problems, at string) {
	r := e.Replay
	at += ".replay"
	switch r.Mode {
	case "", ReplaySnapshot:
		if r.ResourcePath != "" {
			p.add(at+".resource_path", "only for mode %q", ReplayReference)
		}
	case ReplayReference:
		switch {
		case r.ResourcePath == "":
			p.add(at+".resource_path", "required for mode %q: the upstream path of the resource, with %s", ReplayReference, ResourceIDParam)
		case !strings.HasPrefix(r.ResourcePath, "/") || strings.Count(r.ResourcePath, ResourceIDParam) != 1:
			p.add(at+".resource_path", "%q must start with / and contain %s once", r.ResourcePath, ResourceIDParam)
		}
	default:
		p.add(at+".mode", "must be %q or %q, got %q", ReplaySnapshot, ReplayReference, r.Mode)
	}
	for i, k := range r.Keep {
		if _, err := idempotency.ParsePointer(k); err != nil {
			p.add(fmt.Sprintf("%s.keep[%d]", at, i), "%q: %v", k, err)
		}
	}
}
