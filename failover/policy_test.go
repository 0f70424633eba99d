package failover_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
)

func TestDecideRejectsFailedOverShardsAndWaitsWhileTheOwnerIsSuspect(t *testing.T) {
	tests := []struct {
		policy failover.Policy
		state  ownership.State
		owner  failover.RegionState
		want   failover.Action
	}{
		{failover.Reject, ownership.Active, failover.Healthy, failover.Serve},
		{failover.Transfer, ownership.Active, failover.Healthy, failover.Serve},
		{failover.Reject, ownership.FailedOver, failover.Healthy, failover.Refuse},
		{failover.Transfer, ownership.FailedOver, failover.Healthy, failover.Serve},
		{failover.Reject, ownership.Active, failover.Suspect, failover.Wait},
		{failover.Transfer, ownership.Active, failover.Suspect, failover.Wait},
		{failover.Transfer, ownership.Active, failover.Failed, failover.Wait},
		{failover.Transfer, ownership.Fencing, failover.Healthy, failover.Wait},
		{failover.Reject, ownership.Fencing, failover.Healthy, failover.Wait},
		{failover.Transfer, ownership.Active, failover.Recovering, failover.Serve},
		{"", ownership.FailedOver, failover.Healthy, failover.Refuse},              // unknown policy: as reject
		{failover.Transfer, "MOVING", failover.Healthy, failover.Wait},             // unknown state: as fencing
		{failover.Transfer, ownership.FailedOver, failover.Suspect, failover.Wait}, // the new owner suspect
	}
	for _, tc := range tests {
		if got := tc.policy.Decide(tc.state, tc.owner); got != tc.want {
			t.Errorf("Decide(%q, %s, %s) = %s, want %s", tc.policy, tc.state, tc.owner, got, tc.want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]failover.Policy{"": failover.Reject, "reject": failover.Reject, "transfer": failover.Transfer} {
		if got, err := failover.ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := failover.ParsePolicy("maybe"); !errors.Is(err, failover.ErrBadPolicy) {
		t.Errorf("ParsePolicy(maybe): %v", err)
	}
	for _, p := range []failover.Policy{failover.Reject, failover.Transfer} {
		if err := p.Validate(); err != nil {
			t.Errorf("%q.Validate() = %v", p, err)
		}
	}
	for _, p := range []failover.Policy{"", "maybe", "Reject"} {
		err := p.Validate()
		if !errors.Is(err, failover.ErrBadPolicy) {
			t.Errorf("%q.Validate() = %v, want ErrBadPolicy", p, err)
			continue
		}
		if want := `must be "reject" or "transfer", got ` + strconv.Quote(string(p)); err.Error() != want {
			t.Errorf("%q.Validate() = %q, want %q", p, err, want)
		}
	}
}

func TestConfigValidateNamesEveryBadField(t *testing.T) {
	err := failover.Config{ConfirmDelay: -1, MoveConcurrency: -2}.Validate()
	if !errors.Is(err, failover.ErrBadConfig) {
		t.Fatalf("Validate: %v", err)
	}
	for _, field := range []string{"Client", "Directory", "Topology", "Audit", "Name", "ConfirmDelay", "MoveConcurrency"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("Validate does not name %s: %v", field, err)
		}
	}
}
