package failover

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/ownership"
)

// View is the leading controller's view of the regions, as it publishes it
// in etcd (ViewKey) so that operators' tools show the same states the
// controller decides by, and repairs refuse what it would undo.
type View struct {
	// Controller is the name of the controller that published it.
	Controller string `json:"controller"`
	// Term is its election revision.
	Term int64 `json:"term"`
	// Published is when it was written (the controller's clock).
	Published time.Time `json:"published"`
	// Regions are the region states, in topology order.
	Regions []RegionStatus `json:"regions"`
	// HoldTime is the controller's Config.HoldTime: how long a recovering
	// region's instances must stay before it is healthy again. Zero in a
	// view published before it was added.
	HoldTime time.Duration `json:"hold_time,omitempty"`
}

// ViewKey is the etcd key of the controller's published View.
func ViewKey(prefix string) string { return prefix + "failover/view" }

// ReadView reads the published View linearizably; ok is false when no
// controller published one yet.
func ReadView(ctx context.Context, cli *clientv3.Client, prefix string) (v View, ok bool, err error) {
	resp, err := cli.Get(ctx, ViewKey(prefix))
	if err != nil {
		return View{}, false, fmt.Errorf("failover: read the controller's view: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return View{}, false, nil
	}
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		return View{}, false, fmt.Errorf("failover: controller's view at %s: %w", ViewKey(prefix), err)
	}
	return v, true, nil
}

// published is what the controller last wrote, to write only changes.
type published struct {
	term    int64
	regions []RegionStatus
}

// publish writes the tracker's statuses under guard when they changed
// since the last write of this term. A failed write is retried at the
// next pass: the view is for people and repairs, never for the
// controller's own decisions.
func (c *Controller) publish(ctx context.Context, guard clientv3.Cmp) error {
	c.mu.Lock()
	term := c.term
	c.mu.Unlock()
	regions := c.tracker.Statuses()
	if c.last.term == term && slices.EqualFunc(c.last.regions, regions, func(a, b RegionStatus) bool {
		return a.State == b.State && a.Since.Equal(b.Since) && a.Instances == b.Instances
	}) {
		return nil
	}
	b, err := json.Marshal(View{Controller: c.cfg.Name, Term: term, Published: c.cfg.Clock.Now(), Regions: regions,
		HoldTime: c.cfg.HoldTime})
	if err != nil {
		return err
	}
	resp, err := c.cfg.Client.Txn(ctx).If(guard).Then(clientv3.OpPut(ViewKey(c.cfg.Prefix), string(b))).Commit()
	if err != nil {
		return fmt.Errorf("failover: publish the view: %w", err)
	}
	if !resp.Succeeded {
		return ownership.ErrGuardFailed
	}
	c.last = published{term: term, regions: regions}
	return nil
}

// Current returns every region's status for a repair or a display: the
// state from the leading controller's published view (from a fresh
// tracker read when none is published) and the live instances of a fresh
// read of the liveness keys. fromController says which it is.
func Current(ctx context.Context, cli *clientv3.Client, prefix string, topo Topology) (sts []RegionStatus, v View, fromController bool, err error) {
	instances, err := ownership.Instances(ctx, cli, prefix, "")
	if err != nil {
		return nil, View{}, false, err
	}
	live := map[string]int{}
	for _, in := range instances {
		live[in.Region]++
	}
	v, ok, err := ReadView(ctx, cli, prefix)
	if err != nil {
		return nil, View{}, false, err
	}
	byRegion := map[string]RegionStatus{}
	for _, s := range v.Regions {
		byRegion[s.Region] = s
	}
	for _, r := range topo.Names() {
		s, found := byRegion[r]
		if !found {
			// No controller view (no multi-region idemd ever led, or
			// the region is new): what a fresh tracker would say.
			s = RegionStatus{Region: r, State: Healthy}
			if live[r] == 0 {
				s.State = Suspect
			}
		}
		s.Instances = live[r]
		sts = append(sts, s)
	}
	return sts, v, ok, nil
}
