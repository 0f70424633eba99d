package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/store"
)

// repairStoreConns is the store pool of a region-wide repair: enough for
// several shard moves at once (each holds a connection for its fence
// bump), few enough not to crowd the daemons' own pools.
const repairStoreConns = 8

// regionRepairFlags are the flags of failover, failback, drain and accept:
// where etcd, the store and the topology are, and who does it and why.
type regionRepairFlags struct {
	conn   connFlags
	audit  auditFlags
	output string
}

func (f *regionRepairFlags) add(cmd *cobra.Command, reasonHelp string) {
	f.conn.addCluster(cmd)
	f.conn.addStore(cmd)
	f.audit.add(cmd, reasonHelp)
	addOutputFlag(cmd, &f.output)
}

// check validates the flags before anything is opened.
func (f *regionRepairFlags) check() error {
	if err := f.audit.checkRepair(); err != nil {
		return err
	}
	return checkOutput(f.output)
}

// conn is an open connection to a deployment.
type conn struct {
	cli   *clientv3.Client
	store store.Backend
	dir   *ownership.Directory
	topo  *region.Topology
}

func (c *conn) Close() {
	c.store.Close()
	c.cli.Close()
}

// open reads the topology and connects to the store and etcd.
func (f *regionRepairFlags) open(ctx context.Context) (*conn, error) {
	topo, cfg, err := f.conn.topology()
	if err != nil {
		return nil, err
	}
	if len(cfg.Regions) < 2 {
		return nil, fmt.Errorf("--config: %s: failover needs a multi-region topology", count(len(cfg.Regions), "region", "regions"))
	}
	store, err := f.conn.openWith(ctx, storeOpts{maxConns: repairStoreConns})
	if err != nil {
		return nil, err
	}
	cli, err := f.conn.client(ctx)
	if err != nil {
		store.Close()
		return nil, err
	}
	return &conn{cli: cli, store: store, dir: ownership.NewDirectory(cli, store, quiet()), topo: topo}, nil
}
