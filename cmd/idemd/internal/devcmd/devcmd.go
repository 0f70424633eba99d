// Package devcmd is `idemd dev`: a local three-region cluster from
// nothing. It links the test rigs (embedded etcd, a throwaway PostgreSQL,
// the demo services), so only the dev build of idemd (-tags dev) has it;
// the production build execs that build when asked (internal/tagbuild).
package devcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/deploy/haproxy"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/reach"
)

// Logger makes the command's logger from --log-format and --log-level
// (idemd's own).
type Logger func(format, level string) (*slog.Logger, error)

// Command returns `idemd dev`, logging through newLogger.
func Command(newLogger Logger) *cobra.Command {
	var (
		portBase          int
		dbURL             string
		storeMode         string
		logFormat, logLvl string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local three-region cluster on embedded defaults",
		Long: `dev starts, from nothing, a local three-region cluster: regions us-east,
eu-west and ap-south with gateways on 127.0.0.1 ports --port-base, +1, +2; an
embedded three-member etcd cluster; a throwaway PostgreSQL (or --database-url);
and the demo payments service (port-base+100) and bank (port-base+101).
It prints the URLs, the store's DSN, the data directory, each region's config
file and a bearer token for actor "demo" (scope demo/demo), and on Ctrl-C
stops everything and removes its temporary data (so does SIGHUP, when the
terminal closes; what a killed cluster left behind is removed by the next
"idemd dev").

Each cluster keeps its own state file, named by its port base, for idemctl:
several clusters can run side by side on different --port-base values, and
idemctl's --port-base says which one it talks to. The ports are checked before
anything starts.

--store ha replaces the store with one Patroni-managed PostgreSQL cluster per
home region (three members each: the first primary in its home region, one
member in each other region; quorum commit, strict: a commit waits for either
of the other regions' members; the dev etcd as Patroni's DCS under
/idemcoord-dev/patroni/) and prints its members; "idemctl store status" shows
their roles, lag and timelines. It needs Patroni 4 (Debian trixie's package
"patroni") and takes about a minute to start; the default, --store single, is
one throwaway PostgreSQL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(logFormat, logLvl)
			if err != nil {
				return err
			}
			// SIGHUP too: closing the terminal must stop the cluster and
			// remove its data like Ctrl-C, not leave PostgreSQL running.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			if storeMode != devcluster.StoreSingle && storeMode != devcluster.StoreHA {
				return fmt.Errorf("--store %q: want %s or %s", storeMode, devcluster.StoreSingle, devcluster.StoreHA)
			}
			if storeMode == devcluster.StoreHA && dbURL != "" {
				return errors.New("--store ha starts its own PostgreSQL clusters; drop --database-url")
			}
			patronilocal.Sweep() // Patroni members a killed --store ha cluster left
			for _, pid := range devcluster.SweepStale() {
				fmt.Fprintf(cmd.ErrOrStderr(), "removed what a dev cluster that died (pid %d) left behind\n", pid)
			}
			if err := devcluster.CheckPorts(portBase); err != nil {
				return err // before saying anything starts
			}
			if dbURL != "" {
				if err := reach.Store(ctx, dbURL, reach.DefaultTimeout); err != nil {
					return fmt.Errorf("--database-url: %w", err)
				}
			}
			if storeMode == devcluster.StoreHA {
				if _, err := patronilocal.Version(ctx); err != nil {
					return fmt.Errorf("--store ha: %w", err)
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "starting PostgreSQL, etcd, three Patroni clusters (about a minute), demo services and three regions...")
			} else {
				fmt.Fprintln(cmd.ErrOrStderr(), "starting PostgreSQL, etcd, demo services and three regions...")
			}
			c, err := devcluster.Start(ctx, devcluster.Options{PortBase: portBase, DatabaseURL: dbURL, Logger: log, Store: storeMode,
				HoldGateways: true})
			if err != nil && dbURL != "" {
				return fmt.Errorf("with --database-url %s: %w", redactDSN(dbURL), err)
			}
			if err != nil {
				return err
			}
			// The global entry needs haproxy; without it the cluster is
			// the same, and says how to get one.
			if err := c.StartEntry(ctx, nil); err != nil && !errors.Is(err, haproxy.ErrNotInstalled) {
				fmt.Fprintf(cmd.ErrOrStderr(), "global entry not started: %v\n", err)
			}
			statePath := devcluster.StatePath(portBase)
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				c.Close(sctx)
				os.Remove(statePath) // this cluster's own file only
				fmt.Fprintln(cmd.ErrOrStderr(), "stopped; temporary data removed")
			}()
			st := c.State()
			if err := devcluster.WriteState(statePath, st); err != nil {
				return err
			}
			// Only now do the gateways answer, /healthz included: a script
			// that waits for them finds the cluster with idemctl at once.
			c.OpenGateways()
			token, err := c.Token("demo", 24*time.Hour)
			if err != nil {
				return err
			}
			printCluster(cmd.OutOrStdout(), st, statePath, token)
			if len(st.StoreClusters) > 0 {
				printStoreMembers(ctx, cmd.OutOrStdout(), st)
			}
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().IntVar(&portBase, "port-base", devcluster.DefaultPortBase, "port of the first region's gateway; the others follow")
	cmd.Flags().StringVar(&dbURL, "database-url", "", "use this PostgreSQL/CockroachDB URL instead of a throwaway PostgreSQL")
	cmd.Flags().StringVar(&storeMode, "store", devcluster.StoreSingle, "store: single (one throwaway PostgreSQL) or ha (a Patroni cluster per home region)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: json or text")
	cmd.Flags().StringVar(&logLvl, "log-level", "warn", "log level: debug, info, warn or error")
	return cmd
}

// printCluster prints what a new user needs to reach and inspect the
// cluster: its URLs, where its data and configs are, a token, and a first
// request to try.
func printCluster(w io.Writer, st devcluster.State, statePath, token string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tURL")
	for _, r := range devcluster.Regions {
		fmt.Fprintf(tw, "region %s\t%s\n", r, st.Regions[r])
	}
	fmt.Fprintf(tw, "payments (upstream)\t%s\n", st.PaymentsURL)
	fmt.Fprintf(tw, "bank (downstream)\t%s\n", st.BankURL)
	for i, e := range st.Etcd {
		fmt.Fprintf(tw, "etcd member %d\t%s\n", i+1, e)
	}
	fmt.Fprintf(tw, "metrics (per region)\t%s/metrics\n", st.Regions[devcluster.Regions[0]])
	fmt.Fprintf(tw, "dev control\t%s (POST /regions/NAME/stop, /kill, /start; /bank/hang, /heal; GET / lists them)\n", st.ControlURL)
	if st.EntryURL != "" {
		fmt.Fprintf(tw, "global entry (HAProxy)\t%s\n", st.EntryURL)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nRegions for the Go SDK (client.ParseRegions(os.Getenv(\"IDEMCOORD_REGIONS\"))):\n\n  export IDEMCOORD_REGIONS=%s\n", devcluster.SDKRegions(st))
	if st.EntryURL != "" {
		fmt.Fprintf(w, "\nGlobal entry: %s sends each request to a region whose /readyz answers,\n"+
			"and never resends one a region may have received (deploy/haproxy/README.md).\n", st.EntryURL)
	} else {
		fmt.Fprintln(w, "\nGlobal entry: not started; install haproxy (apt-get install -y haproxy) to get one in front of the regions.")
	}
	fmt.Fprintf(w, "\nStore (DSN):     %s\n", redactDSN(st.DSN))
	fmt.Fprintf(w, "Data directory:  %s\n", st.DataDir)
	if st.PostgresDir != "" {
		fmt.Fprintf(w, "PostgreSQL data: %s (log: postgres.log)\n", st.PostgresDir)
	}
	fmt.Fprintf(w, "State file:      %s (idemctl reads it)\n", statePath)
	fmt.Fprintln(w, "Region configs (idemd run --config FILE serves one):")
	for _, r := range devcluster.Regions {
		fmt.Fprintf(w, "  %-9s %s\n", r, st.Configs[r])
	}
	if d := st.Demo; d.Owner != "" {
		fmt.Fprintf(w, "\nActor %s is on shard %d, owned by %s (epoch %d, %s): a request that lands in\n"+
			"another region is forwarded there once (X-Idempotency-Region names who served it).\n",
			d.Actor, d.Shard, d.Owner, d.Epoch, d.State)
	}
	fmt.Fprintf(w, "\nBearer token for actor \"demo\" (scope demo/demo, 24h):\n\n  export TOKEN=%s\n\n", token)
	fmt.Fprintf(w, "Try a payment, then retry it (same key) in another region:\n\n")
	for _, r := range devcluster.Regions[:2] {
		fmt.Fprintf(w, "  curl -si %s/v1/payments -H \"Authorization: Bearer $TOKEN\" -H 'Idempotency-Key: order-1' \\\n    --json '{\"amount\":\"12.50\",\"currency\":\"EUR\",\"reference\":\"order-1\"}'\n", st.Regions[r])
	}
	fmt.Fprintf(w, "\nTwo failover policies side by side. Once a region is lost, POST /v1/payments is failover: reject\n"+
		"(its actors get 503 until failback or idemctl failover accept) and POST /v1/transfers is\n"+
		"failover: transfer (the new owner serves them as soon as the shards moved). Try a transfer:\n\n")
	fmt.Fprintf(w, "  curl -si %s/v1/transfers -H \"Authorization: Bearer $TOKEN\" -H 'Idempotency-Key: transfer-1' \\\n    --json '{\"amount\":\"5.00\",\"currency\":\"EUR\",\"reference\":\"transfer-1\"}'\n", st.Regions[devcluster.Regions[0]])
	// The region to stop is the demo actor's owner: stopping another
	// would fail over nothing the curls above touched.
	owner := st.Demo.Owner
	if owner == "" {
		owner = devcluster.Regions[0]
	}
	fmt.Fprintf(w, "\nWatch a failover: stop the region that owns actor demo (%[3]s), see its state and its shards move, bring it back:\n\n"+
		"  curl -X POST %[1]s/regions/%[3]s/stop\n  go run ./cmd/idemctl --port-base %[2]d regions\n"+
		"  go run ./cmd/idemctl --port-base %[2]d shards --home %[3]s\n  curl -X POST %[1]s/regions/%[3]s/start\n"+
		"  go run ./cmd/idemctl --port-base %[2]d failback %[3]s --reason 'region back'   # once regions says healthy\n"+
		"\nTo leave work in flight instead (what a failover's reconciliation is about): POST %[1]s/bank/hang,\n"+
		"send a payment, POST %[1]s/regions/%[3]s/kill, then idemctl op list --region %[3]s (GET %[1]s/ lists it all).\n",
		st.ControlURL, st.PortBase, owner)
	fmt.Fprintln(w, "\nCtrl-C stops everything.")
}

// redactDSN hides a password in a URL DSN (a --database-url may carry one).
func redactDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return dsn
	}
	return u.Redacted()
}
