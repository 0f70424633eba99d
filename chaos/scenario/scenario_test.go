package scenario

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

func TestEveryShippedScenarioLoadsAndPlans(t *testing.T) {
	want := []string{"crash-points", "etcd-leader-kill", "etcd-partition", "mixed", "peer-partition", "region-loss-full",
		"region-loss-reject", "region-loss-transfer", "short-pause", "slow-region", "sql-partition", "store-failover",
		"zombie-pause"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		t.Run(name, func(t *testing.T) {
			s, err := Load(name)
			if err != nil {
				t.Fatal(err)
			}
			sched, err := failpoint.Plan(s.FaultSpec(s.Duration), 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(sched.Faults) != s.Faults.Count || s.Profile(s.Duration).Validate() != nil {
				t.Fatalf("schedule %v, profile %+v", sched.Faults, s.Profile(s.Duration))
			}
		})
	}
}

func TestLoadRefusesAnUnknownName(t *testing.T) {
	if _, err := Load("meteor-strike"); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "mixed") {
		t.Fatalf("Load = %v, want ErrUnknown listing the shipped scenarios", err)
	}
}

func TestParseReportsEveryProblemWithItsPath(t *testing.T) {
	bad := `name: x
policy: maybe
duration: 10s
lease: 0s
traffic:
  actors: 0
  cross_region_retry: 1.5
faults:
  kinds: [kill_region, meteor]
  points: [nowhere]
  count: 1
  regions: [us-east]
  min_for: 1s
  max_for: 2s
`
	_, err := Parse([]byte(bad))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Parse = %v, want ErrInvalid", err)
	}
	for _, p := range []string{"policy:", "lease:", "traffic.actors:", "traffic.cross_region_retry:",
		"faults.kinds[1]:", "faults.points[0]:"} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not name %s:\n%v", p, err)
		}
	}
}

func TestParseRefusesUnknownFields(t *testing.T) {
	_, err := Parse([]byte("name: x\npolicy: reject\nduration: 1s\nlease: 1s\ntraffic: {actors: 1}\nfautls: {}\n"))
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "fautls") {
		t.Fatalf("Parse = %v, want the misspelt field named", err)
	}
}

func TestFaultSpecScalesWithTheRunsDuration(t *testing.T) {
	for _, name := range Names() {
		s, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []time.Duration{20 * time.Second, s.Duration, 10 * time.Minute} {
			spec := s.FaultSpec(d)
			sched, err := failpoint.Plan(spec, 7)
			if err != nil {
				t.Fatalf("%s over %v: %v", name, d, err)
			}
			if len(sched.Faults) < 1 {
				t.Errorf("%s over %v: no faults", name, d)
			}
			if d == 10*time.Minute && len(sched.Faults) <= s.Faults.Count {
				t.Errorf("%s over 10m: %d faults, want more than the %d of %v", name, len(sched.Faults), s.Faults.Count, s.Duration)
			}
		}
	}
}
