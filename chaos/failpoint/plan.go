package failpoint

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrInvalidSpec is wrapped by Spec.Validate and Plan.
var ErrInvalidSpec = errors.New("failpoint: invalid spec")

// Spec says what faults a schedule may hold; Plan turns it and a seed into
// a Schedule.
type Spec struct {
	// Kinds are the kinds to draw from, uniformly. Empty means no faults.
	Kinds []Kind
	// Count is how many faults the schedule holds, one after another.
	Count int
	// Regions are the regions a fault may target.
	Regions []string
	// Window is the part of the run faults fall into: [Warmup, Duration-Cooldown].
	Duration, Warmup, Cooldown time.Duration
	// MinFor and MaxFor bound each fault's length.
	MinFor, MaxFor time.Duration
	// Lease is the coordinator's lease: a PauseRegion lasts at least
	// Lease plus a quarter, so the paused region comes back a zombie.
	Lease time.Duration
	// Links are the links Latency and ResetPeer may act on. Default Links.
	Links []Link
	// MaxLatency and MaxJitter bound Latency's delay. Defaults 200 ms, 50 ms.
	MaxLatency, MaxJitter time.Duration
	// Points are the crash points CrashPoint may arm. Default CrashPoints.
	Points []string
	// MaxSkew bounds ClockSkew's offset either way. Default 2 s.
	MaxSkew time.Duration
}

// Validate reports every unusable field, each as "field: reason".
func (s Spec) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalidSpec, field, fmt.Sprintf(format, args...)))
	}
	for i, k := range s.Kinds {
		if !known(k) {
			bad(fmt.Sprintf("kinds[%d]", i), "unknown fault kind %q", k)
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
	if hasKind(s.Kinds, CutPeer) && len(s.Regions) < 2 {
		bad("regions", "cut_peer needs at least two regions")
	}
	window := s.Duration - s.Warmup - s.Cooldown
	switch {
	case s.MinFor <= 0 && s.Count > 0:
		bad("min_for", "must be positive")
	case s.MaxFor < s.MinFor:
		bad("max_for", "%v is below min_for %v", s.MaxFor, s.MinFor)
	case s.Count > 0 && window < time.Duration(s.Count)*s.forCap():
		bad("duration", "%v leaves %v after warmup and cooldown, too short for %d faults of up to %v", s.Duration, window, s.Count, s.forCap())
	}
	return errors.Join(errs...)
}

// forCap is the longest a fault may last, a pause's lease included.
func (s Spec) forCap() time.Duration { return max(s.MaxFor, s.pauseFor()) }

func (s Spec) pauseFor() time.Duration {
	if hasKind(s.Kinds, PauseRegion) {
		return s.Lease + s.Lease/4
	}
	return 0
}

func known(k Kind) bool { return hasKind(Kinds, k) }

func hasKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
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
		f := Fault{Kind: spec.Kinds[rng.IntN(len(spec.Kinds))]}
		f.For = spec.MinFor + between(rng, spec.MaxFor-spec.MinFor)
		if f.Kind != KillEtcdLeader {
			f.Region = spec.Regions[rng.IntN(len(spec.Regions))]
		}
		switch f.Kind {
		case PauseRegion:
			f.For = max(f.For, spec.pauseFor())
		case Latency:
			f.Link = spec.Links[rng.IntN(len(spec.Links))]
			f.Latency = time.Millisecond + between(rng, spec.MaxLatency)
			f.Jitter = between(rng, spec.MaxJitter)
		case ResetPeer:
			f.Link = spec.Links[rng.IntN(len(spec.Links))]
		case CrashPoint:
			f.Point = spec.Points[rng.IntN(len(spec.Points))]
		case ClockSkew:
			f.Skew = between(rng, 2*spec.MaxSkew) - spec.MaxSkew
		case ShortPause:
			f.For = min(f.For, ShortPauseMax)
		case CutPeer:
			others := make([]string, 0, len(spec.Regions))
			for _, r := range spec.Regions {
				if r != f.Region {
					others = append(others, r)
				}
			}
			f.Peer = others[rng.IntN(len(others))]
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
