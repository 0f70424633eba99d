package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// regionsOut is `idemctl regions -o json`.
type regionsOut struct {
	Regions []struct {
		Region    string         `json:"region"`
		State     string         `json:"state"`
		For       string         `json:"for"`
		Health    string         `json:"health"`
		Instances []any          `json:"instances"`
		Shards    map[string]int `json:"shards"`
	} `json:"regions"`
	ControllerView bool `json:"controller_view"`
}

// regionState returns region's state, live instances and owned shards as
// `idemctl regions` reports them.
func regionState(t *testing.T, conn []string, region string) (state string, live, owned int, fromController bool) {
	t.Helper()
	r := runCtl(t, nil, append([]string{"regions", "-o", "json"}, conn...)...)
	if r.code != 0 {
		t.Fatalf("idemctl regions: exit %d: %s", r.code, r.stderr)
	}
	var out regionsOut
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("idemctl regions -o json: %v\n%s", err, r.stdout)
	}
	for _, v := range out.Regions {
		if v.Region == region {
			n := 0
			for _, c := range v.Shards {
				n += c
			}
			return v.State, len(v.Instances), n, out.ControllerView
		}
	}
	t.Fatalf("idemctl regions: no region %s in %s", region, r.stdout)
	return "", 0, 0, false
}

// TestFailbackAndDrainRefuseARegionThatIsDownOrRecovering: with us-east of
// a real dev cluster stopped and failed over by the controller, `idemctl
// failback us-east` and `idemctl drain us-east` exit 1 naming the region's
// state and move nothing; once us-east runs again, failback is still
// refused while the controller calls it recovering; --force then moves
// the shards home and the audit row says it was forced, and from what
// state.
func TestFailbackAndDrainRefuseARegionThatIsDownOrRecovering(t *testing.T) {
	c := devCluster(t)
	conn := []string{"--config", c.Region("eu-west").ConfigPath}
	repair := append([]string{"--operator", "oncall", "--reason", "INC-7"}, conn...)
	if err := c.StopRegion(t.Context(), "us-east"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() string {
		st, live, owned, ctl := regionState(t, conn, "us-east")
		if st != "failed" || live != 0 || owned != 0 || !ctl {
			return fmt.Sprintf("us-east is %s (controller's view: %v) with %d live instances and %d shards; want failed, failed over", st, ctl, live, owned)
		}
		return ""
	})
	before := runCtl(t, nil, append([]string{"shards", "-o", "json"}, conn...)...)

	for _, cmd := range []string{"failback", "drain"} {
		r := runCtl(t, nil, append([]string{cmd, "us-east"}, repair...)...)
		if r.code != 1 || !strings.Contains(r.stderr, "us-east is failed for") ||
			!strings.Contains(r.stderr, "no live instance") || !strings.Contains(r.stderr, "--force") {
			t.Errorf("%s us-east while it is down: exit %d, stderr %q; want exit 1 naming the state failed, no live instance and --force", cmd, r.code, r.stderr)
		}
	}
	if after := runCtl(t, nil, append([]string{"shards", "-o", "json"}, conn...)...); after.stdout != before.stdout {
		t.Errorf("a refused failback or drain changed the ownership map:\nbefore %s\nafter %s", before.stdout, after.stdout)
	}

	if err := c.StartRegion(t.Context(), "us-east"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, func() string {
		if st, live, _, _ := regionState(t, conn, "us-east"); st != "recovering" || live == 0 {
			return fmt.Sprintf("us-east is %s with %d live instances; want recovering with one", st, live)
		}
		return ""
	})
	r := runCtl(t, nil, append([]string{"failback", "us-east"}, repair...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "us-east is recovering") {
		t.Errorf("failback us-east while recovering: exit %d, stderr %q; want exit 1 naming the state recovering", r.code, r.stderr)
	}

	r = runCtl(t, nil, append([]string{"failback", "us-east", "--force", "-o", "json"}, repair...)...)
	if r.code != 0 {
		t.Fatalf("failback us-east --force: exit %d: %s", r.code, r.stderr)
	}
	if _, _, owned, _ := regionState(t, conn, "us-east"); owned == 0 {
		t.Errorf("after failback --force us-east owns no shard")
	}
	r = runCtl(t, nil, append([]string{"audit", "-o", "json"}, conn...)...)
	if !strings.Contains(r.stdout, `"action": "failback"`) || !strings.Contains(r.stdout, "forced=true (us-east was recovering with 1 live instance)") {
		t.Errorf("audit after failback --force: %s\nwant a failback row saying forced, and the state it overrode", r.stdout)
	}
}
