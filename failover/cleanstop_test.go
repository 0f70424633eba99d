package failover_test

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/failover"
)

// TestTheRegionFailoverAuditSaysWhetherTheRegionLeftCleanly: the
// region_failover audit row of a region whose instances left cleanly (a
// stop) says so, and does not claim a missing liveness key for the
// confirmation delay (none was waited for); a region whose instances
// vanished (killed) says the liveness key was missing that long.
func TestTheRegionFailoverAuditSaysWhetherTheRegionLeftCleanly(t *testing.T) {
	for _, tc := range []struct {
		name, want, notWant string
		stop                func(*member)
	}{
		{"stopped cleanly", "left cleanly", "no liveness key", func(m *member) { m.l.Leave() }},
		{"killed", "no liveness key for", "left cleanly", func(m *member) { m.kill() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			live := everyRegion(t, e)
			fake := clock.NewFake(epoch0())
			c := start(t, e, "c1", fake)
			eventually(t, "c1 to lead and see every region healthy", nil, func() bool {
				st := c.States()
				return c.Leading() && st["us-east"] == failover.Healthy && st["eu-west"] == failover.Healthy
			})
			tc.stop(live["us-east"])
			eventually(t, "us-east to fail over", func() { fake.Advance(failover.DefaultPollInterval) }, func() bool {
				return len(audit(t, e.store, "region_failover")) > 0
			})
			row := audit(t, e.store, "region_failover")[0]
			if !strings.Contains(row.Reason, tc.want) || strings.Contains(row.Reason, tc.notWant) {
				t.Errorf("region_failover reason %q; want it to say %q, not %q", row.Reason, tc.want, tc.notWant)
			}
		})
	}
}
