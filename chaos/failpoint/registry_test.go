package failpoint

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEveryFaultKindIsOneCompleteRow: each kind has one row, with a
// description for --help and the docs and an Apply, and Kinds lists the
// rows in order.
func TestEveryFaultKindIsOneCompleteRow(t *testing.T) {
	seen := map[Kind]bool{}
	for _, d := range Defs() {
		if seen[d.Kind] {
			t.Errorf("kind %s has two rows", d.Kind)
		}
		seen[d.Kind] = true
		if d.Doc == "" || d.Apply == nil {
			t.Errorf("row %s lacks its Doc or its Apply", d.Kind)
		}
		if !strings.Contains(Usage(), "  "+string(d.Kind)+" ("+d.Class.String()+"): "+d.Doc) {
			t.Errorf("Usage does not list %s", d.Kind)
		}
	}
	if !slices.Equal(Kinds, kindsOf(Defs())) {
		t.Errorf("Kinds = %v, want the registry's order", Kinds)
	}
}

// TestDrillsDocListsEveryFaultKind: docs/drills.md's table of fault kinds
// has a row per registered kind, with its class, so the docs cannot
// miss a fault the registry gained.
func TestDrillsDocListsEveryFaultKind(t *testing.T) {
	doc, err := os.ReadFile("../../docs/drills.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Defs() {
		row := fmt.Sprintf("| `%s` | %s |", d.Kind, d.Class)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/drills.md has no row starting %q", row)
		}
	}
}

// stallTarget is a cluster with processes only.
type stallTarget struct{ calls []string }

func (s *stallTarget) Kill(_ context.Context, r string) error    { return s.log("kill " + r) }
func (s *stallTarget) Restart(_ context.Context, r string) error { return s.log("restart " + r) }
func (s *stallTarget) Pause(_ context.Context, r string) error   { return s.log("pause " + r) }
func (s *stallTarget) Resume(_ context.Context, r string) error  { return s.log("resume " + r) }
func (s *stallTarget) log(c string) error                        { s.calls = append(s.calls, c); return nil }

// TestANewFaultKindNeedsOnlyItsRow adds a kind as one row and nothing
// else: validation accepts it (and runs its check), the planner draws its
// parameters and applies its length cap, its description shows in
// schedules and in --help, and the injector applies and heals it on a
// cluster with the capability it names, and refuses it, naming that
// capability, on one without.
func TestANewFaultKindNeedsOnlyItsRow(t *testing.T) {
	const stall Kind = "test_stall"
	registry = append(registry, Def{Kind: stall, Class: ClassNoFailover, AtMost: 2 * time.Second,
		Doc: "stalls a region briefly; heals by resuming it",
		Check: func(s Spec, bad func(field, format string, args ...any)) {
			if s.MaxFor > time.Minute {
				bad("max_for", "test_stall lasts at most a minute")
			}
		},
		Draw:     func(f *Fault, s Spec, rng *rand.Rand) { f.Point = fmt.Sprintf("step-%d", rng.IntN(3)) },
		Describe: func(f Fault) string { return " at " + f.Point },
		Apply:    on(inRegion(ProcessTarget.Pause), inRegion(ProcessTarget.Resume))})
	defer func() { registry = registry[:len(registry)-1] }()

	spec := Spec{Kinds: []Kind{stall}, Count: 2, Regions: []string{"a", "b"}, Duration: time.Minute,
		MinFor: 3 * time.Second, MaxFor: 5 * time.Second}
	sched, err := Plan(spec, 1)
	if err != nil {
		t.Fatalf("Plan = %v, want the new kind accepted", err)
	}
	for _, f := range sched.Faults {
		if f.Kind != stall || f.For != 2*time.Second || !strings.HasPrefix(f.Point, "step-") ||
			f.String() != fmt.Sprintf("test_stall %s at %s for 2s", f.Region, f.Point) {
			t.Errorf("planned %#v (%s): want the row's draw, cap and description", f, f)
		}
	}
	spec.MaxFor = 2 * time.Minute
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "max_for: test_stall lasts at most a minute") {
		t.Errorf("Validate = %v, want the row's check", err)
	}
	if !strings.Contains(Usage(), "test_stall (must not fail over): stalls a region briefly") {
		t.Errorf("Usage does not list the new kind:\n%s", Usage())
	}

	c := &stallTarget{}
	inj := NewInjector(c)
	f := sched.Faults[0]
	if err := inj.Inject(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if err := inj.Heal(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"pause " + f.Region, "resume " + f.Region}, c.calls); diff != "" {
		t.Errorf("cluster calls (-want +got):\n%s", diff)
	}
	err = NewInjector(struct{}{}).Inject(context.Background(), f)
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "test_stall needs failpoint.ProcessTarget") {
		t.Errorf("Inject on a cluster without processes = %v, want ErrUnsupported naming the capability", err)
	}
}
