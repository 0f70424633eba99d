package policy_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/failover/policy"
)

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]policy.Policy{"": policy.Reject, "reject": policy.Reject, "transfer": policy.Transfer} {
		if got, err := policy.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := policy.Parse("maybe"); !errors.Is(err, policy.ErrBad) {
		t.Errorf("Parse(maybe): %v", err)
	}
	for _, p := range []policy.Policy{policy.Reject, policy.Transfer} {
		if err := p.Validate(); err != nil {
			t.Errorf("%q.Validate() = %v", p, err)
		}
	}
	for _, p := range []policy.Policy{"", "maybe", "Reject"} {
		err := p.Validate()
		if !errors.Is(err, policy.ErrBad) {
			t.Errorf("%q.Validate() = %v, want ErrBad", p, err)
			continue
		}
		if want := `must be "reject" or "transfer", got ` + strconv.Quote(string(p)); err.Error() != want {
			t.Errorf("%q.Validate() = %q, want %q", p, err, want)
		}
	}
}

func TestEveryPolicyWaitsWhileMovingOrOwnerDownAndUnknownsActAsReject(t *testing.T) {
	tests := []struct {
		policy policy.Policy
		in     policy.Situation
		want   policy.Action
	}{
		{policy.Reject, policy.Settled, policy.Serve},
		{policy.Transfer, policy.Settled, policy.Serve},
		{policy.Reject, policy.Moving, policy.Wait},
		{policy.Transfer, policy.Moving, policy.Wait},
		{policy.Reject, policy.OwnerDown, policy.Wait},
		{policy.Transfer, policy.OwnerDown, policy.Wait},
		{policy.Reject, policy.FailedOver, policy.Refuse},
		{policy.Transfer, policy.FailedOver, policy.Serve},
		{policy.Reject, policy.NewOwnerDown, policy.Refuse},
		{policy.Transfer, policy.NewOwnerDown, policy.Wait},
		{"", policy.FailedOver, policy.Refuse},               // unknown policy: as reject
		{"maybe", policy.FailedOver, policy.Refuse},          // unknown policy: as reject
		{policy.Transfer, policy.Situation(99), policy.Wait}, // unknown situation: as moving
		{policy.Transfer, policy.Situation(-1), policy.Wait},
	}
	for _, tc := range tests {
		if got := tc.policy.In(tc.in); got != tc.want {
			t.Errorf("%q.In(%d) = %s, want %s", tc.policy, tc.in, got, tc.want)
		}
	}
}

func TestEveryActionButServeCarriesAClientAnswer(t *testing.T) {
	if _, ok := policy.Serve.Answer(); ok {
		t.Errorf("Serve has an answer: the owner answers a served request")
	}
	for _, a := range []policy.Action{policy.Wait, policy.Refuse} {
		ans, ok := a.Answer()
		if !ok {
			t.Errorf("%s has no answer", a)
			continue
		}
		if ans.Result == "" || ans.Problem == "" || ans.Title == "" || ans.RetryAfter < 1e9 {
			t.Errorf("%s's answer is incomplete: %+v", a, ans)
		}
		detail := ans.DetailFor(7, "FAILED_OVER", "eu-west", "suspect")
		if strings.Contains(detail, "%!") || !strings.Contains(detail, "shard 7") || !strings.Contains(detail, `"eu-west"`) {
			t.Errorf("%s's detail does not format: %q", a, detail)
		}
	}
	if !policy.Wait.Holds() || policy.Refuse.Holds() || policy.Serve.Holds() {
		t.Errorf("Holds: wait %v, refuse %v, serve %v; want only wait", policy.Wait.Holds(), policy.Refuse.Holds(), policy.Serve.Holds())
	}
	if got := policy.Action(9).String(); got != "action(9)" {
		t.Errorf("Action(9).String() = %q", got)
	}
}
