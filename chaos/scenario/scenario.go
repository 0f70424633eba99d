package scenario

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/traffic"
	"github.com/idemcoord/idemcoord/failover/policy"
)

// Errors returned by this package.
var (
	// ErrInvalid wraps every validation problem of a scenario.
	ErrInvalid = errors.New("scenario: invalid")
	// ErrUnknown is returned by Load for a name that is not shipped.
	ErrUnknown = errors.New("scenario: unknown scenario")
)

//go:embed scenarios/*.yaml
var shipped embed.FS

// Scenario is one drill: what traffic runs, what faults hit it, under
// which failover policy.
type Scenario struct {
	// Name identifies the scenario (the file name without .yaml).
	Name string `yaml:"name"`
	// Description says what it proves, for the report.
	Description string `yaml:"description"`
	// Policy is the endpoint's failover policy (policy.Reject or
	// policy.Transfer), validated as the configuration validates it.
	Policy policy.Policy `yaml:"policy"`
	// Duration is the main phase's length (traffic and faults).
	Duration time.Duration `yaml:"duration"`
	// Lease is the coordinator's lease in the drill's cluster.
	Lease time.Duration `yaml:"lease"`
	// Traffic shapes the workload.
	Traffic Traffic `yaml:"traffic"`
	// Faults says what may be injected.
	Faults Faults `yaml:"faults"`
	// ProbeInterval is how often the drill probes the store (a stale-epoch
	// write, a provoked 40001). 0 disables probes.
	ProbeInterval time.Duration `yaml:"probe_interval"`
	// Store is the SQL store the cluster runs on: "single" (the default,
	// one PostgreSQL) or "ha" (PostgreSQL replicated across the regions
	// under Patroni, which the store faults need).
	Store string `yaml:"store"`
}

// Traffic is the YAML form of traffic.Profile; each field means what the
// Profile field of the same name means.
type Traffic struct {
	Actors           int     `yaml:"actors"`
	Intents          int     `yaml:"intents"`
	Rate             float64 `yaml:"rate"`
	CrossRegionRetry float64 `yaml:"cross_region_retry"`
	DuplicateRetry   float64 `yaml:"duplicate_retry"`
	ChangedBody      float64 `yaml:"changed_body"`
	MaxAttempts      int     `yaml:"max_attempts"`
}

// Faults is a scenario's faults block: failpoint.Spec, whose fields
// carry their YAML names (kinds, count, regions, warmup, cooldown,
// min_for, max_for, links, max_latency, max_jitter, points, max_skew);
// its Duration and Lease are the scenario's.
type Faults = failpoint.Spec

// Profile returns the traffic profile, its main phase lasting d.
func (s Scenario) Profile(d time.Duration) traffic.Profile {
	t := s.Traffic
	return traffic.Profile{Actors: t.Actors, Intents: t.Intents, Duration: d, Rate: t.Rate,
		CrossRegionRetry: t.CrossRegionRetry, DuplicateRetry: t.DuplicateRetry, ChangedBody: t.ChangedBody, MaxAttempts: t.MaxAttempts}
}

// FaultSpec returns the fault spec over a main phase of d. A d other than
// the scenario's Duration scales the fault count with it (at least one
// fault stays), and a shorter d also shrinks warmup and cooldown, so a
// short CI run and a long soak both use the scenario as written; the count
// is then capped at what fits without overlap.
func (s Scenario) FaultSpec(d time.Duration) failpoint.Spec {
	f := s.Faults
	spec := f
	spec.Duration, spec.Lease = d, s.Lease
	if d == s.Duration || d <= 0 || s.Duration <= 0 || f.Count == 0 {
		return spec
	}
	ratio := float64(d) / float64(s.Duration)
	spec.Count = max(1, int(math.Round(float64(f.Count)*ratio)))
	if ratio < 1 {
		spec.Warmup = time.Duration(float64(f.Warmup) * ratio)
		spec.Cooldown = time.Duration(float64(f.Cooldown) * ratio)
	}
	longest := spec.Longest()
	if window := d - spec.Warmup - spec.Cooldown; longest > 0 && window > 0 {
		spec.Count = max(1, min(spec.Count, int(window/longest)))
	}
	return spec
}

// Parse reads one scenario from YAML. Unknown fields are errors; every
// problem is reported, each as "path: reason", wrapped in ErrInvalid.
func Parse(data []byte) (Scenario, error) {
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return Scenario{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return s, s.Validate()
}

// Validate reports every problem of s as "path: reason".
func (s Scenario) Validate() error {
	var errs []error
	bad := func(p, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, p, fmt.Sprintf(format, args...)))
	}
	if s.Name == "" {
		bad("name", "required")
	}
	if err := s.Policy.Validate(); err != nil {
		bad("policy", "%v", err)
	}
	if s.Duration <= 0 {
		bad("duration", "must be positive")
	}
	if s.Lease <= 0 {
		bad("lease", "must be positive")
	}
	if s.Store != "" && s.Store != "single" && s.Store != "ha" {
		bad("store", "must be single or ha, got %q", s.Store)
	}
	if s.ProbeInterval < 0 {
		bad("probe_interval", "must not be negative")
	}
	errs = append(errs, prefixed("traffic.", traffic.ErrInvalidConfig, s.Profile(max(s.Duration, 1)).Validate())...)
	spec := s.FaultSpec(s.Duration)
	if s.Duration <= 0 {
		spec.Count = 0 // no main phase to fit faults in: their parameters alone are checked
	}
	errs = append(errs, prefixed("faults.", failpoint.ErrInvalidSpec, spec.Validate())...)
	return errors.Join(errs...)
}

// prefixed re-reports a package's "sentinel: field: reason" errors as
// "path.field: reason".
func prefixed(p string, sentinel, err error) []error {
	if err == nil {
		return nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out []error
	for _, e := range list {
		msg := strings.TrimPrefix(e.Error(), sentinel.Error()+": ")
		out = append(out, fmt.Errorf("%w: %s%s", ErrInvalid, p, msg))
	}
	return out
}

// Names lists the shipped scenarios, sorted.
func Names() []string {
	entries, _ := shipped.ReadDir("scenarios")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	slices.Sort(out)
	return out
}

// Load returns the shipped scenario called name.
func Load(name string) (Scenario, error) {
	data, err := shipped.ReadFile(path.Join("scenarios", name+".yaml"))
	if err != nil {
		return Scenario{}, fmt.Errorf("%w %q (shipped: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	s, err := Parse(data)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", name, err)
	}
	if s.Name != name {
		return Scenario{}, fmt.Errorf("%w: scenario file %s.yaml: name: is %q", ErrInvalid, name, s.Name)
	}
	return s, nil
}
