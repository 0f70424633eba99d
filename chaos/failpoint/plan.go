package failpoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// ErrInvalidSpec is wrapped by Spec.Validate and Plan.
var ErrInvalidSpec = errors.New("failpoint: invalid spec")

// Spec says what faults a schedule may hold; Plan turns it and a seed into
// a Schedule.
type Spec struct {
	// Kinds are the kinds to draw from, uniformly. Empty means no faults.
	Kinds []Kind `yaml:"kinds"`
	// InOrder takes the kinds in their order, one fault each, round and
	// round, instead of drawing them: a scenario that must hold every kind
	// at every seed (a zombie primary and a killed one).
	InOrder bool `yaml:"in_order"`
	// Count is how many faults the schedule holds, one after another.
	Count int `yaml:"count"`
	// Regions are the regions a fault may target.
	Regions []string `yaml:"regions"`
	// Duration, Warmup and Cooldown set the part of the run faults fall
	// into: [Warmup, Duration-Cooldown]. A scenario sets Duration.
	Duration time.Duration `yaml:"-"`
	Warmup   time.Duration `yaml:"warmup"`
	Cooldown time.Duration `yaml:"cooldown"`
	// MinFor and MaxFor bound each fault's length (a kind's row may
	// lengthen or cap it: Def.AtLeast, Def.AtMost).
	MinFor time.Duration `yaml:"min_for"`
	MaxFor time.Duration `yaml:"max_for"`
	// Lease is the coordinator's lease (a scenario sets it): a PauseRegion
	// lasts at least Lease plus a quarter, so the paused region comes back
	// a zombie.
	Lease time.Duration `yaml:"-"`
	// Links are the links Latency and ResetPeer may act on. Default Links.
	Links []Link `yaml:"links"`
	// MaxLatency and MaxJitter bound Latency's delay. Defaults 200 ms, 50 ms.
	MaxLatency time.Duration `yaml:"max_latency"`
	MaxJitter  time.Duration `yaml:"max_jitter"`
	// Points are the crash points CrashPoint may arm. Default CrashPoints.
	Points []string `yaml:"points"`
	// MaxSkew bounds ClockSkew's offset either way. Default 2 s.
	MaxSkew time.Duration `yaml:"max_skew"`
}

// Validate reports every unusable field, each as "field: reason".
func (s Spec) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalidSpec, field, fmt.Sprintf(format, args...)))
	}
	for i, k := range s.Kinds {
		if _, ok := Lookup(k); !ok {
			bad(fmt.Sprintf("kinds[%d]", i), "unknown fault kind %q (known: %s)", k, kindNames())
		}
	}
	for _, k := range s.Kinds {
		if d, _ := Lookup(k); d.Check != nil {
			d.Check(s, bad)
		}
	}
	for i, p := range s.Points {
		if !slices.Contains(CrashPoints, p) {
			bad(fmt.Sprintf("points[%d]", i), "unknown crash point %q (known: %s)", p, strings.Join(CrashPoints, ", "))
		}
	}
	for i, l := range s.Links {
		if !slices.Contains(Links, l) {
			bad(fmt.Sprintf("links[%d]", i), "unknown link %q", l)
		}
	}
	if s.Count < 0 {
		bad("count", "%d is negative", s.Count)
	}
	if s.Count > 0 && len(s.Kinds) == 0 {
		bad("kinds", "required when count > 0")
	}
	if s.Count > 0 && len(s.Regions) == 0 {
		bad("regions", "required when count > 0")
	}
	window := s.Duration - s.Warmup - s.Cooldown
	switch {
	case s.MinFor <= 0 && s.Count > 0:
		bad("min_for", "must be positive")
	case s.MaxFor < s.MinFor:
		bad("max_for", "%v is below min_for %v", s.MaxFor, s.MinFor)
	case s.Count > 0 && window < time.Duration(s.Count)*s.Longest():
		bad("duration", "%v leaves %v after warmup and cooldown, too short for %d faults of up to %v", s.Duration, window, s.Count, s.Longest())
	}
	return errors.Join(errs...)
}

// Longest is the longest a fault may last: MaxFor, or more where a
// kind's row lengthens it (a pause outlasts the lease).
func (s Spec) Longest() time.Duration {
	longest := s.MaxFor
	for _, k := range s.Kinds {
		if d, ok := Lookup(k); ok && d.AtLeast != nil {
			longest = max(longest, d.AtLeast(s))
		}
	}
	return longest
}

// Schedule is a planned sequence of faults, sorted by start, none
// overlapping.
type Schedule struct {
	// Seed is the seed it was planned from.
	Seed uint64
	// Faults are in start order.
	Faults []Fault
}

// Plan returns the schedule spec and seed determine: the same pair always
// gives the same schedule. The window is cut into Count equal slots; each
// fault starts at a random point of its slot that leaves room for its
// length.
func Plan(spec Spec, seed uint64) (Schedule, error) {
	if err := spec.Validate(); err != nil {
		return Schedule{}, err
	}
	spec = spec.withDefaults()
	rng := rand.New(rand.NewPCG(seed, 0x5deece66d))
	sched := Schedule{Seed: seed}
	if spec.Count == 0 {
		return sched, nil
	}
	slot := (spec.Duration - spec.Warmup - spec.Cooldown) / time.Duration(spec.Count)
	for i := range spec.Count {
		var f Fault
		if spec.InOrder {
			f.Kind = spec.Kinds[i%len(spec.Kinds)]
		} else {
			f.Kind = spec.Kinds[rng.IntN(len(spec.Kinds))]
		}
		f.For = spec.MinFor + between(rng, spec.MaxFor-spec.MinFor)
		d, _ := Lookup(f.Kind) // Validate checked every kind
		if !d.ClusterWide {
			f.Region = spec.Regions[rng.IntN(len(spec.Regions))]
		}
		if d.AtLeast != nil {
			f.For = max(f.For, d.AtLeast(spec))
		}
		if d.AtMost > 0 {
			f.For = min(f.For, d.AtMost)
		}
		if d.Draw != nil {
			d.Draw(&f, spec, rng)
		}
		f.For = min(f.For, slot)
		f.At = spec.Warmup + time.Duration(i)*slot + between(rng, slot-f.For)
		sched.Faults = append(sched.Faults, f)
	}
	return sched, nil
}

// between returns a uniform duration in [0, d], 0 when d <= 0; whole
// milliseconds, so schedules read well.
func between(rng *rand.Rand, d time.Duration) time.Duration {
	if d < time.Millisecond {
		return 0
	}
	return time.Duration(rng.Int64N(int64(d/time.Millisecond)+1)) * time.Millisecond
}

func (s Spec) withDefaults() Spec {
	if len(s.Links) == 0 {
		s.Links = Links
	}
	if s.MaxLatency <= 0 {
		s.MaxLatency = 200 * time.Millisecond
	}
	if s.MaxJitter <= 0 {
		s.MaxJitter = 50 * time.Millisecond
	}
	if len(s.Points) == 0 {
		s.Points = CrashPoints
	}
	if s.MaxSkew <= 0 {
		s.MaxSkew = 2 * time.Second
	}
	return s
}
