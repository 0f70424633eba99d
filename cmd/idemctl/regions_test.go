package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/failover"
)

// TestRegionsShowsTheControllersStateAndRepairsPrintOnlyTheirResult: in a
// real dev cluster whose controller confirms a failure only after an hour,
// a cleanly stopped us-east is nevertheless "failed" in `idemctl regions`
// (its instances left, so the controller needs no confirmation: the state
// shown is the controller's, not a liveness probe's "suspect"), with for
// how long, while the others are "healthy", and the table says the states
// are the elected controller's. A repair (drain ap-south) prints its summary
// line and nothing on stderr; the libraries' log lines and the connection steps
// appear only with --verbose.
func TestRegionsShowsTheControllersStateAndRepairsPrintOnlyTheirResult(t *testing.T) {
	c := devClusterWith(t, devcluster.Options{FailoverTimings: failover.Config{ConfirmDelay: time.Hour}})
	conn := []string{"--config", c.Region("eu-west").ConfigPath}
	if err := c.StopRegion(t.Context(), "us-east"); err != nil {
		t.Fatal(err)
	}
	var table string
	waitFor(t, 30*time.Second, func() string {
		r := runCtl(t, nil, append([]string{"regions"}, conn...)...)
		table = r.stdout
		if !regexp.MustCompile(`(?m)^us-east\s+failed\s+\d+(ms|s|m\d+s)\s+down\s`).MatchString(r.stdout) {
			return "us-east is not failed, with its age, in\n" + r.stdout + r.stderr
		}
		return ""
	})
	for _, want := range []string{`(?m)^REGION\s+STATE\s+FOR\s+HEALTH`, `(?m)^eu-west\s+healthy\s+\d`, `(?m)^ap-south\s+healthy\s+\d`,
		`(?m)^state: failover controller \S+ \(term \d+\), published \d`} {
		if !regexp.MustCompile(want).MatchString(table) {
			t.Errorf("regions table lacks %s:\n%s", want, table)
		}
	}
	repair := append([]string{"--operator", "oncall", "--reason", "CHG-1"}, conn...)
	r := runCtl(t, nil, append([]string{"drain", "ap-south"}, repair...)...)
	if r.code != 0 || r.stderr != "" || !regexp.MustCompile(`^drain ap-south: (\d+) of \d+ shards moved to eu-west, ACTIVE\n$`).MatchString(r.stdout) {
		t.Errorf("drain ap-south: exit %d, stdout %q, stderr %q; want its one summary line and an empty stderr", r.code, r.stdout, r.stderr)
	}
	r = runCtl(t, nil, append([]string{"failback", "ap-south", "--verbose"}, repair...)...)
	if r.code != 0 || !strings.Contains(r.stderr, "idemctl: connecting to etcd ") || !strings.Contains(r.stderr, "level=") {
		t.Errorf("failback ap-south --verbose: exit %d, stderr %q; want the connection steps and library log lines", r.code, r.stderr)
	}
}
