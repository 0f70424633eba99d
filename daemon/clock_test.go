package daemon_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/drillpoint"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestOptionsClockIsTheFailoverClock: the daemon's injected clock
// (Options.Clock, the drill build's skewable clock) is the one its
// failover tracker stamps region states with, not the system clock: with
// the clock a day behind, the local region is in its state since a day
// ago.
func TestOptionsClockIsTheFailoverClock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	skew := drillpoint.NewSkewClock(nil)
	skew.SetOffset(-24 * time.Hour)
	before := time.Now()
	d, err := daemon.Start(ctx, review2Config(t, ec.Endpoints()), daemon.Options{Logger: quiet(), Migrate: true, Clock: skew})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	// The tracker sees the instance's own liveness key through its watch:
	// poll (bounded) until it has, then read the state's time.
	var st []failover.RegionStatus
	testutil.Eventually(t, 5*time.Second, func() error {
		st = d.Failover().Tracker().Statuses()
		if len(st) > 0 && st[0].Region == "us-east" && st[0].State != "" && st[0].Instances > 0 {
			return nil
		}
		return fmt.Errorf("the tracker never saw us-east's instance: %v", st)
	})
	if !st[0].Since.Before(before.Add(-23 * time.Hour)) {
		t.Errorf("us-east %s since %v; want about a day before %v (the injected clock's time)", st[0].State,
			st[0].Since, before)
	}
}
