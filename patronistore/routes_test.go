package patronistore_test

import (
	"testing"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/patronistore"
)

// TestRoutesKeepASplitRegionsShardsInTheRegion: by home region by
// default; a cluster with ranges and regions takes only the shards in
// its ranges homed in its regions, so a region spread over two clusters
// keeps every shard at home.
func TestRoutesKeepASplitRegionsShardsInTheRegion(t *testing.T) {
	regions := []string{"us-east", "eu-west", "ap-south"}
	home := func(n int) string { return regions[n%3] }
	cfg := &config.PatroniStore{Clusters: []config.PatroniCluster{
		{Name: "us-east"}, {Name: "eu-west"},
		{Name: "ap-south", Regions: []string{"ap-south"}},
		{Name: "ap-south-2", Regions: []string{"ap-south"}, Shards: []string{"512-1023"}},
	}}
	route, err := patronistore.Routes(cfg, 1024, home)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ shard, want int }{{0, 0}, {1, 1}, {2, 2}, {509, 2}, {512, 3}, {513, 0}, {514, 1}, {1022, 3}, {1023, 0}} {
		if got := route(c.shard); got != c.want {
			t.Errorf("shard %d (home %s) -> cluster %d, want %d", c.shard, home(c.shard), got, c.want)
		}
	}
}
