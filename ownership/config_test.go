package ownership_test

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/ownership"
)

// TestOwnershipDefaultConfigsNameTheMissingFieldAndValidateOnceSet: the
// cache's and the liveness key's DefaultConfig carry the documented
// defaults, Validate names a required field left unset, and the
// constructors accept them once it is set.
func TestOwnershipDefaultConfigsNameTheMissingFieldAndValidateOnceSet(t *testing.T) {
	cli := client(t, cluster(t).Endpoints())

	cc := ownership.DefaultCacheConfig()
	if cc.Prefix != ownership.DefaultPrefix || cc.Logger == nil || cc.Clock == nil {
		t.Fatalf("DefaultCacheConfig left a default out: %+v", cc)
	}
	if err := cc.Validate(); err == nil || !strings.Contains(err.Error(), "Client is required") {
		t.Errorf("cache without Client: %v, want an error naming Client", err)
	}
	if _, err := ownership.NewCache(cc); err == nil {
		t.Error("NewCache without Client succeeded")
	}
	cc.Client = cli
	if _, err := ownership.NewCache(cc); err != nil {
		t.Errorf("NewCache(DefaultCacheConfig with Client): %v", err)
	}

	lc := ownership.DefaultLivenessConfig()
	if lc.Prefix != ownership.DefaultPrefix || lc.TTL != ownership.DefaultLivenessTTL ||
		lc.PauseBudget != ownership.DefaultPauseBudget || lc.Drift != ownership.DefaultClockDrift ||
		lc.RegisterTimeout != ownership.DefaultRegisterTimeout || lc.Clock == nil || lc.Logger == nil {
		t.Fatalf("DefaultLivenessConfig left a default out: %+v", lc)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*ownership.LivenessConfig)
		field string
	}{
		{"no client", func(c *ownership.LivenessConfig) { c.Region, c.Instance = "us-east", "i1" }, "Client"},
		{"no instance", func(c *ownership.LivenessConfig) { c.Client, c.Region = cli, "us-east" }, "Instance"},
		{"negative drift", func(c *ownership.LivenessConfig) {
			c.Client, c.Region, c.Instance, c.Drift = cli, "us-east", "i1", -1
		}, "Drift"},
	} {
		c := ownership.DefaultLivenessConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Validate = %v, want an error naming %s", tc.name, err, tc.field)
		}
		if _, err := ownership.NewLiveness(c); err == nil {
			t.Errorf("%s: NewLiveness succeeded", tc.name)
		}
	}
	lc.Client, lc.Region, lc.Instance = cli, "us-east", "i1"
	if _, err := ownership.NewLiveness(lc); err != nil {
		t.Errorf("NewLiveness(DefaultLivenessConfig with the required fields): %v", err)
	}
}
