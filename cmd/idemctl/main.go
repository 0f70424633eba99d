// Command idemctl is the operator's tool for idemcoord.
//
//	idemctl dev token --actor NAME    a bearer token for the running dev cluster
//	idemctl regions                   health, live instances and shards per region
//	idemctl owner --actor T/S         which region owns an actor (shard, epoch, state)
//	idemctl shards                    the whole ownership map
//	idemctl move --shard N --to R     a planned, fenced move (audited)
//	idemctl op get ID                 an operation by id (a read)
//	idemctl op find --actor A --endpoint E --key K   an operation by its key (a read)
//	idemctl op list --region R | --shard N  what a region or shard left in flight (a read)
//	idemctl migrate                   apply the schema (nothing else changes it)
//	idemctl version                   module version and commit
//	idemctl op reconcile|purge|cleanup  repairs, each audited with --operator and --reason
//	idemctl failover|failback|drain REGION, failover accept  region repairs (audited)
//	idemctl audit                     the repair audit
//	idemctl drill run --scenario NAME --seed N   a chaos drill and its report
//	idemctl deploy cockroach-sql --config FILE    the CockroachDB layout of a topology
//
// With --config (a region's idemd.yaml), --etcd or --dsn (or their
// $IDEMCOORD_* variables), every connection comes from those flags and the
// file, never from a dev cluster. With none of them, commands use the
// running dev cluster: the only one, or the one started with --port-base N.
// Every command takes --output table|json.
//
// The production build leaves out the drill harness (toxiproxy, the
// cluster rigs, the demo services): `idemctl drill` is in the build made
// with -tags drill, and the production build's drill builds that one
// from the module source and execs it (internal/tagbuild), so
// `go run ./cmd/idemctl drill run ...` works from a checkout.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/devcluster/devstate"
	"github.com/idemcoord/idemcoord/internal/flagsuggest"
)

func main() {
	root := newRoot(drillCmd())
	cmd, err := root.ExecuteC()
	if err != nil {
		printError(os.Stderr, cmd, err)
		os.Exit(1)
	}
}

// newRoot is idemctl's command tree with drill as `idemctl drill` (this
// build's drillCmd; the tests' rootCmd has the drill build's).
func newRoot(drill *cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           "idemctl",
		Short:         "Operate an idemcoord deployment",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagsuggest.Suggest)
	root.PersistentFlags().IntVar(&devPortBase, "port-base", 0,
		"which running dev cluster to use: the N it was started with (idemd dev --port-base N); default the only one running")
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false,
		"print the connection steps and the libraries' own log lines on stderr")
	root.AddCommand(devCmd(), opCmd(), regionsCmd(), ownerCmd(), shardsCmd(), moveCmd(), deployCmd(),
		failoverCmd(), failbackCmd(), drainCmd(), storeCmd(), auditCmd(), incidentCmd(), migrateCmd(), versionCmd(), drill, openapiCmd())
	flagsuggest.Groups(root)
	return root
}

func devCmd() *cobra.Command {
	dev := &cobra.Command{Use: "dev", Short: "Work with the local dev cluster started by `idemd dev`"}
	var actor, format string
	var ttl time.Duration
	token := &cobra.Command{
		Use:   "token --actor NAME",
		Short: "Print a bearer token for an actor of the running dev cluster",
		Long: `token signs a JWT for actor NAME (tenant "demo": its actor scope is demo/NAME)
with the running dev cluster's secret, read from its state file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			st, err := devState()
			if err != nil {
				return err
			}
			t, err := devstate.Token(st.Secret, actor, ttl)
			if err != nil {
				return err
			}
			if format == outputJSON {
				return render(cmd.OutOrStdout(), format, table{v: map[string]any{"token": t, "actor": actor, "ttl": ttl.String()}})
			}
			fmt.Fprintln(cmd.OutOrStdout(), t) // bare, for $(idemctl dev token ...)
			return nil
		},
	}
	token.Flags().StringVar(&actor, "actor", "", "actor (JWT subject) to sign for (required)")
	token.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "token lifetime")
	token.MarkFlagRequired("actor")
	addOutputFlag(token, &format)
	dev.AddCommand(token)
	return dev
}
