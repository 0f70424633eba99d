package devcluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/idemcoord/idemcoord/devcluster/devstate"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
)

// Store modes (Options.Store).
const (
	StoreSingle = devstate.StoreSingle
	StoreHA     = devstate.StoreHA
)

// StoreCluster is one home region's Patroni cluster (Options.Store
// StoreHA).
type StoreCluster struct {
	// Home is the region whose shards it is meant to hold; its member in
	// Home is its first primary.
	Home string
	*patronilocal.Cluster
}

// storeNamespace is the dev etcd prefix of the Patroni clusters' keys,
// apart from the coordinator's own.
const storeNamespace = "/idemcoord-dev/patroni/"

// storeMembers places a home region's cluster: its first member (the
// first primary) in home, the others in the other regions, so the
// synchronous standby is in another region and the third elsewhere.
func storeMembers(home string) []patronilocal.MemberSpec {
	specs := []patronilocal.MemberSpec{{Name: home, Region: home}}
	for _, r := range Regions {
		if r != home {
			specs = append(specs, patronilocal.MemberSpec{Name: r, Region: r})
		}
	}
	return specs
}

// startStores starts one Patroni cluster per region, concurrently (each
// takes seconds: a bootstrap, two base backups, a synchronous standby).
func (c *Cluster) startStores(ctx context.Context, log *slog.Logger) error {
	type result struct {
		i   int
		c   *patronilocal.Cluster
		err error
	}
	results := make(chan result, len(Regions))
	for i, home := range Regions {
		cfg := patronilocal.DefaultConfig()
		cfg.Scope = home
		cfg.Namespace = storeNamespace
		cfg.Members = storeMembers(home)
		cfg.EtcdEndpoints = c.Etcd.Endpoints()
		// Quorum commit, as deploy/patroni: a commit waits for either of
		// the two other regions' members, so losing one stalls nothing.
		cfg.Quorum = true
		cfg.Logger = log.With("store_cluster", home)
		go func() {
			pc, err := patronilocal.Start(ctx, cfg)
			results <- result{i, pc, err}
		}()
	}
	c.Stores = make([]*StoreCluster, len(Regions))
	var errs []error
	for range Regions {
		r := <-results
		if r.err != nil {
			errs = append(errs, fmt.Errorf("store cluster %s: %w", Regions[r.i], r.err))
			continue
		}
		c.Stores[r.i] = &StoreCluster{Home: Regions[r.i], Cluster: r.c}
	}
	return errors.Join(errs...)
}

// storeState is the state file's view of the Patroni clusters.
func (c *Cluster) storeState() []devstate.StoreCluster {
	var out []devstate.StoreCluster
	for _, s := range c.Stores {
		if s == nil {
			continue
		}
		sc := devstate.StoreCluster{Name: s.Scope(), DSN: s.DSN(), REST: s.RESTURLs()}
		for _, e := range s.Endpoints() {
			sc.Members = append(sc.Members, devstate.StoreMember{Name: e.Name, Region: e.Region, Addr: e.Addr, REST: e.REST})
		}
		out = append(out, sc)
	}
	return out
}

// closeStores stops every Patroni cluster.
func (c *Cluster) closeStores() error {
	var errs []error
	for _, s := range c.Stores {
		if s != nil {
			errs = append(errs, s.Stop())
		}
	}
	return errors.Join(errs...)
}

// storeClustersFor returns the clusters a region's config lists
// (store.backend patroni), or none: a single store, or a region given its
// own DSN (RegionOptions.DSN) by a drill or a test.
func (c *Cluster) storeClustersFor(ro RegionOptions) []devstate.StoreCluster {
	if ro.DSN != "" {
		return nil
	}
	return c.storeState()
}
