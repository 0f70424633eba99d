package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/daemon"
)

func regionsCmd() *cobra.Command {
	var endpoints []string
	cmd := &cobra.Command{
		Use:   "regions",
		Short: "Show each region's live instances (liveness keys in etcd)",
		Long: `regions lists, per region, the idemd instances whose liveness key is
present in etcd. An instance that stopped
answering disappears within its lease TTL (5 s). It reads etcd linearizably.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(endpoints) == 0 {
				st, err := devState()
				if err != nil {
					return fmt.Errorf("--etcd not set and %w", err)
				}
				endpoints = st.Etcd
			}
			cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			resp, err := cli.Get(ctx, daemon.LivenessPrefix, clientv3.WithPrefix())
			if err != nil {
				return fmt.Errorf("etcd: %w", err)
			}
			type row struct{ region, instance, since string }
			var rows []row
			for _, kv := range resp.Kvs {
				region, instance, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), daemon.LivenessPrefix), "/")
				rows = append(rows, row{region, instance, string(kv.Value)})
			}
			sort.Slice(rows, func(i, j int) bool { return rows[i].region+rows[i].instance < rows[j].region+rows[j].instance })
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REGION\tINSTANCE\tUP SINCE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.region, r.instance, r.since)
			}
			tw.Flush()
			if len(rows) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no live instances")
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&endpoints, "etcd", nil, "etcd endpoints (default: the running dev cluster's)")
	return cmd
}
