package failpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
)

// Class is how a drill's report treats a fault's window.
type Class int

// Classes of faults.
const (
	// ClassOther neither takes a region out nor must spare it (a reset
	// link, an etcd leader kill, a skewed clock): its window is measured
	// for traffic only.
	ClassOther Class = iota
	// ClassRegionLoss takes a region out of service: the report measures
	// failover, in-flight intents and the availability classes inside its
	// window, and a failover of its region then is explained (not false).
	ClassRegionLoss
	// ClassNoFailover must not fail its region over (a slow link, a cut
	// from one peer, a stall under the liveness budget): a failover of
	// the region in its window counts as a false failover.
	ClassNoFailover
)

// String names the class as --help and the docs list it.
func (c Class) String() string {
	switch c {
	case ClassRegionLoss:
		return "region loss"
	case ClassNoFailover:
		return "must not fail over"
	}
	return "other"
}

// Def is one fault kind's row in the registry (kinds.go): everything the
// planner, the validation, the injector, the report and the docs know of
// it. Adding a fault kind is adding a row, plus the method each cluster
// kind implements for the capability its Apply needs (targets.go).
type Def struct {
	// Kind is the fault's name in scenarios, schedules and histories.
	Kind Kind
	// Doc says what the fault does and how it heals, for `idemctl drill
	// run --help` and docs/drills.md.
	Doc string
	// Class is how the report treats the fault's window.
	Class Class
	// ClusterWide faults target no region (Fault.Region stays empty).
	ClusterWide bool
	// AtLeast, when set, is the least the fault lasts under a spec,
	// whatever max_for says (a pause outlasts the lease).
	AtLeast func(Spec) time.Duration
	// AtMost, when positive, caps the fault's length (a short pause
	// stays under the liveness budget).
	AtMost time.Duration
	// Check, when set, reports through bad what a spec drawing this kind
	// lacks ("regions", "cut_peer needs at least two regions").
	Check func(s Spec, bad func(field, format string, args ...any))
	// Draw, when set, draws the fault's parameters from rng, after its
	// kind, length and region were drawn.
	Draw func(f *Fault, s Spec, rng *rand.Rand)
	// Describe, when set, is what Fault.String says after the kind and
	// the region (" at after_claim").
	Describe func(Fault) string
	// Apply injects the fault into a cluster and returns its heal.
	Apply Apply
}

// Apply injects f into target (the drill's cluster) and returns what
// heals it. A target without the capability the fault needs gets
// ErrUnsupported (wrapped), naming it.
type Apply func(ctx context.Context, target any, f Fault) (Heal, error)

// Heal undoes an injected fault: restarts what was killed, resumes what
// was paused, restores links and clocks.
type Heal func(ctx context.Context) error

// Lookup returns kind's row.
func Lookup(kind Kind) (Def, bool) {
	i := slices.IndexFunc(registry, func(d Def) bool { return d.Kind == kind })
	if i < 0 {
		return Def{}, false
	}
	return registry[i], true
}

// Defs returns every row of the registry, in its order.
func Defs() []Def { return slices.Clone(registry) }

// Kinds lists every fault kind, in the registry's order (a spec drawing
// from Kinds indexes it with its seed: the order is part of a schedule).
var Kinds = kindsOf(registry)

func kindsOf(defs []Def) []Kind {
	out := make([]Kind, len(defs))
	for i, d := range defs {
		out[i] = d.Kind
	}
	return out
}

// kindNames lists the kinds for an error message.
func kindNames() string {
	names := make([]string, len(registry))
	for i, d := range registry {
		names[i] = string(d.Kind)
	}
	return strings.Join(names, ", ")
}

// Usage lists every fault kind, its class and what it does, one kind
// per paragraph, for `idemctl drill run --help`.
func Usage() string {
	var b strings.Builder
	for _, d := range registry {
		fmt.Fprintf(&b, "  %s (%s): %s\n", d.Kind, d.Class, d.Doc)
	}
	return b.String()
}

// with builds an Apply from an injection on capability T of the cluster
// that returns its own heal (the etcd leader kill restarts the member it
// found).
func with[T any](apply func(context.Context, T, Fault) (Heal, error)) Apply {
	return func(ctx context.Context, target any, f Fault) (Heal, error) {
		t, ok := target.(T)
		if !ok {
			return nil, fmt.Errorf("%w: %s needs %s", ErrUnsupported, f.Kind, reflect.TypeFor[T]())
		}
		return apply(ctx, t, f)
	}
}

// on builds an Apply from the injection and the heal of a fault on
// capability T of the cluster.
func on[T any](inject, heal func(context.Context, T, Fault) error) Apply {
	return with(func(ctx context.Context, t T, f Fault) (Heal, error) {
		if err := inject(ctx, t, f); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return heal(ctx, t, f) }, nil
	})
}

// inRegion adapts a capability's per-region method (a method expression
// such as Processes.Kill) to a fault's action on its region.
func inRegion[T any](m func(T, context.Context, string) error) func(context.Context, T, Fault) error {
	return func(ctx context.Context, t T, f Fault) error { return m(t, ctx, f.Region) }
}

// NewInjector returns an Injector over target (the drill's cluster):
// each fault is applied through its row's Apply, to the capability target
// implements for it, or reported ErrUnsupported; Heal runs the heal its
// injection returned.
func NewInjector(target any) Injector { return &injector{target: target, heals: map[Fault]Heal{}} }

type injector struct {
	target any

	mu    sync.Mutex
	heals map[Fault]Heal // injected, not yet healed
}

// Inject implements Injector.
func (in *injector) Inject(ctx context.Context, f Fault) error {
	d, ok := Lookup(f.Kind)
	if !ok {
		return fmt.Errorf("%w: kind %q", ErrUnsupported, f.Kind)
	}
	heal, err := d.Apply(ctx, in.target, f)
	if err != nil {
		return err
	}
	in.mu.Lock()
	in.heals[f] = heal
	in.mu.Unlock()
	return nil
}

// Heal implements Injector: a fault that was not injected has nothing to
// heal.
func (in *injector) Heal(ctx context.Context, f Fault) error {
	in.mu.Lock()
	heal := in.heals[f]
	delete(in.heals, f)
	in.mu.Unlock()
	if heal == nil {
		return nil
	}
	return heal(ctx)
}
