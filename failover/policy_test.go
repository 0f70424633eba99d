package failover_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/ownership"
)

func TestDecideRejectsFailedOverShardsAndWaitsWhileTheOwnerIsSuspect(t *testing.T) {
	tests := []struct {
		policy policy.Policy
		state  ownership.State
		owner  failover.RegionState
		want   policy.Action
	}{
		{policy.Reject, ownership.Active, failover.Healthy, policy.Serve},
		{policy.Transfer, ownership.Active, failover.Healthy, policy.Serve},
		{policy.Reject, ownership.FailedOver, failover.Healthy, policy.Refuse},
		{policy.Transfer, ownership.FailedOver, failover.Healthy, policy.Serve},
		{policy.Reject, ownership.Active, failover.Suspect, policy.Wait},
		{policy.Transfer, ownership.Active, failover.Suspect, policy.Wait},
		{policy.Transfer, ownership.Active, failover.Failed, policy.Wait},
		{policy.Transfer, ownership.Fencing, failover.Healthy, policy.Wait},
		{policy.Reject, ownership.Fencing, failover.Healthy, policy.Wait},
		{policy.Transfer, ownership.Active, failover.Recovering, policy.Serve},
		{"", ownership.FailedOver, failover.Healthy, policy.Refuse},            // unknown policy: as reject
		{policy.Transfer, "MOVING", failover.Healthy, policy.Wait},             // unknown state: as fencing
		{policy.Transfer, ownership.FailedOver, failover.Suspect, policy.Wait}, // the new owner suspect
		{policy.Reject, ownership.FailedOver, failover.Failed, policy.Refuse},  // refused whatever the new owner's state
	}
	for _, tc := range tests {
		if got := failover.Decide(tc.policy, tc.state, tc.owner); got != tc.want {
			t.Errorf("Decide(%q, %s, %s) = %s, want %s", tc.policy, tc.state, tc.owner, got, tc.want)
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
