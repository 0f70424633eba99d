package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
)

// connFlags are the connection flags of the ownership commands: etcd for
// the directory, the SQL store for the fences and the audit, and an idemd
// configuration file for the topology.
type connFlags struct {
	etcd          []string
	dsn, cfg, pfx string
}

func (f *connFlags) add(cmd *cobra.Command) {
	var envEtcd []string
	if v := os.Getenv("IDEMCOORD_ETCD"); v != "" {
		envEtcd = strings.Split(v, ",")
	}
	cmd.Flags().StringSliceVar(&f.etcd, "etcd", envEtcd,
		"etcd endpoints (default $IDEMCOORD_ETCD, else the config file's etcd.endpoints, else the running dev cluster's)")
	cmd.Flags().StringVar(&f.dsn, "dsn", os.Getenv("IDEMCOORD_DSN"),
		"store URL (default $IDEMCOORD_DSN, else the config file's store.dsn, else the running dev cluster's)")
	cmd.Flags().StringVar(&f.cfg, "config", "", "an idemd configuration file: its regions list is the topology (required)")
	cmd.Flags().StringVar(&f.pfx, "prefix", ownership.DefaultPrefix, "etcd prefix of the ownership directory")
}

// fileConfig is what the ownership commands read of an idemd file. It is
// read leniently (no secret needs to resolve): only these fields matter.
type fileConfig struct {
	Region  string          `yaml:"region"`
	Regions []config.Region `yaml:"regions"`
	Etcd    struct {
		Endpoints []string `yaml:"endpoints"`
	} `yaml:"etcd"`
	Store struct {
		DSN string `yaml:"dsn"`
	} `yaml:"store"`
}

// conn is an open connection to a deployment.
type conn struct {
	cli   *clientv3.Client
	store *crdb.Store
	dir   *ownership.Directory
	topo  *region.Topology
}

func (c *conn) Close() {
	c.store.Close()
	c.cli.Close()
}

// open connects to etcd and the store and reads the topology.
func (f *connFlags) open(ctx context.Context) (*conn, error) {
	if f.cfg == "" {
		return nil, errors.New("--config is required: the idemd configuration file whose regions list is the topology " +
			"(the list order decides each shard's home region)")
	}
	data, err := os.ReadFile(f.cfg)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	var fc fileConfig
	if err := yaml.Unmarshal(data, &fc); err != nil {
		return nil, fmt.Errorf("--config %s: %w", f.cfg, err)
	}
	if len(fc.Regions) == 0 {
		return nil, fmt.Errorf("--config %s: no regions list: failover needs a multi-region topology", f.cfg)
	}
	local := fc.Region
	if local == "" {
		local = fc.Regions[0].Name
	}
	topo, err := region.New(local, fc.Regions)
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", f.cfg, err)
	}
	etcd, dsn := f.etcd, f.dsn
	if len(etcd) == 0 {
		etcd = fc.Etcd.Endpoints
	}
	if dsn == "" {
		dsn = fc.Store.DSN
	}
	if len(etcd) == 0 || dsn == "" {
		st, err := devcluster.ReadState(devcluster.StatePath())
		if err != nil {
			return nil, fmt.Errorf("--etcd or --dsn not set and no config file value: %w", err)
		}
		if len(etcd) == 0 {
			etcd = st.Etcd
		}
		if dsn == "" {
			dsn = st.DSN
		}
	}
	store, err := crdb.Open(ctx, crdb.Config{DSN: dsn, MaxConns: 4})
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: etcd, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("etcd: %w", err)
	}
	dir := ownership.NewDirectory(cli, store, ownership.WithPrefix(f.pfx))
	return &conn{cli: cli, store: store, dir: dir, topo: topo}, nil
}

// repairFlags are the audit trail every repair requires.
type repairFlags struct{ operator, reason string }

func (f *repairFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.operator, "operator", "", "who is doing this, recorded in the audit (required)")
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, recorded in the audit (required)")
}

// check names the first missing flag.
func (f *repairFlags) check() error {
	switch {
	case strings.TrimSpace(f.operator) == "":
		return errors.New("--operator is required: every repair is audited with who did it")
	case strings.TrimSpace(f.reason) == "":
		return errors.New("--reason is required: every repair is audited with why")
	}
	return nil
}
