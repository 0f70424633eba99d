package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/region"
	"github.com/idemcoord/idemcoord/sqlstore/multiregion"
)

func deployCmd() *cobra.Command {
	deploy := &cobra.Command{Use: "deploy", Short: "Print what a deployment applies by hand"}
	var path, database, format string
	sql := &cobra.Command{
		Use:   "cockroach-sql --config FILE",
		Short: "Print the CockroachDB multi-region layout generated from the region topology",
		Long: `cockroach-sql reads an idemd configuration (its regions list, successor
orders and shard count) and prints the CockroachDB-only DDL that keeps
claims region-local: records and fences REGIONAL BY ROW, homed by the same
function of the shard as the coordinator, the records' primary key starting
with shard, and lease preferences that follow each region's failover order.
Review it, then apply it once after the portable migrations. It connects to
nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			cfg, err := config.Load(path)
			if err != nil {
				return configError(path, err)
			}
			top, err := region.FromConfig(cfg)
			if err != nil {
				return err
			}
			out, err := multiregion.Generate(layoutOf(top, cfg.Shards, database))
			if err != nil {
				return err
			}
			if format == outputJSON { // the SQL as one string, for tooling
				return render(cmd.OutOrStdout(), format, table{v: map[string]any{"database": database, "sql": out}})
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), out) // table: the SQL file itself
			return err
		},
	}
	sql.Flags().StringVar(&path, "config", "", "idemd configuration file (required)")
	sql.Flags().StringVar(&database, "database", multiregion.DefaultDatabase, "database to alter")
	sql.MarkFlagRequired("config")
	addOutputFlag(sql, &format)
	sql.Flags().Lookup("output").Usage = "output format: table (the SQL as text) or json (the SQL as one string)"
	deploy.AddCommand(sql)
	return deploy
}

// layoutOf is the layout of a topology: regions in configuration order,
// each with its full successor order; the first region is primary.
func layoutOf(top *region.Topology, shards int, database string) multiregion.Layout {
	l := multiregion.Layout{Database: database, Shards: shards}
	for _, r := range top.Regions() {
		l.Regions = append(l.Regions, multiregion.Region{Name: r.Name, Successors: r.Successors})
	}
	return l
}
