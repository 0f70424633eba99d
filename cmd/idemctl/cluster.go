package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/region"
)

// etcdCallTimeout bounds each etcd read or move of a command.
const etcdCallTimeout = 10 * time.Second

// clusterFlags say where the ownership directory (etcd) and the topology
// (a region's idemd.yaml) are: flags, else environment, else the running
// dev cluster.
type clusterFlags struct {
	etcd   []string
	config string
}

func (f *clusterFlags) add(cmd *cobra.Command) {
	var def []string
	if v := os.Getenv("IDEMCOORD_ETCD"); v != "" {
		def = strings.Split(v, ",")
	}
	cmd.Flags().StringSliceVar(&f.etcd, "etcd", def,
		"etcd endpoints (default $IDEMCOORD_ETCD, else the running dev cluster's)")
	cmd.Flags().StringVar(&f.config, "config", os.Getenv("IDEMCOORD_CONFIG"),
		"a region's idemd.yaml, for the regions list (default $IDEMCOORD_CONFIG, else the dev cluster's)")
}

// client connects to etcd.
func (f *clusterFlags) client() (*clientv3.Client, error) {
	endpoints := f.etcd
	if len(endpoints) == 0 {
		st, err := devState()
		if err != nil {
			return nil, fmt.Errorf("--etcd not set and %w", err)
		}
		endpoints = st.Etcd
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	return cli, nil
}

// topology loads the regions list from --config, or from the dev
// cluster's first region's file.
func (f *clusterFlags) topology() (*region.Topology, *config.Config, error) {
	path := f.config
	if path == "" {
		st, err := devState()
		if err != nil {
			return nil, nil, fmt.Errorf("--config not set and %w", err)
		}
		path = st.Configs[devcluster.Regions[0]]
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, nil, err
	}
	top, err := region.FromConfig(cfg)
	return top, cfg, err
}

// connect loads the topology and connects to etcd: what every read of
// the ownership directory needs first. The caller closes the client.
func (f *clusterFlags) connect() (*region.Topology, *config.Config, *clientv3.Client, error) {
	top, cfg, err := f.topology()
	if err != nil {
		return nil, nil, nil, err
	}
	cli, err := f.client()
	if err != nil {
		return nil, nil, nil, err
	}
	return top, cfg, cli, nil
}

// quiet is the logger of the directory's own progress lines: the command
// prints its result itself, so only warnings reach stderr.
func quiet() ownership.Option {
	return ownership.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// etcdContext bounds one etcd call of a command.
func etcdContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return context.WithTimeout(cmd.Context(), etcdCallTimeout)
}
