package devcluster

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/idemcoord/idemcoord/deploy/haproxy"
)

// EntryPortOffset places the global entry at port base+103, after the
// dev control endpoint.
const EntryPortOffset = 103

// StartEntry starts the global entry, HAProxy with deploy/haproxy's
// configuration, in front of the cluster's regions: at port base+103, or
// a free port with a zero base. Its request log goes to logs (nil:
// discarded). It returns haproxy.ErrNotInstalled when haproxy is absent;
// the cluster works without it. Close stops it.
func (c *Cluster) StartEntry(ctx context.Context, logs io.Writer) error {
	listen := "127.0.0.1:0"
	if c.portBase != 0 {
		listen = fmt.Sprintf("127.0.0.1:%d", c.portBase+EntryPortOffset)
	}
	cfg := haproxy.Config{Listen: listen}
	for _, r := range c.Topology {
		reg, err := haproxy.RegionFromURL(r.Name, r.URL)
		if err != nil {
			return err
		}
		cfg.Regions = append(cfg.Regions, reg)
	}
	e, err := haproxy.Start(ctx, cfg, logs)
	if err != nil {
		return err
	}
	c.Entry, c.EntryURL = e, e.URL
	return nil
}

// SDKRegions is the cluster's regions list in the form client.ParseRegions
// reads (and IDEMCOORD_REGIONS holds): name=URL, comma-separated, in the
// cluster's order.
func SDKRegions(st State) string {
	var parts []string
	for _, r := range Regions {
		parts = append(parts, r+"="+st.Regions[r])
	}
	return strings.Join(parts, ",")
}
