package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/devcluster"
)

func devCmd() *cobra.Command {
	var (
		portBase          int
		dbURL             string
		logFormat, logLvl string
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local three-region cluster on embedded defaults",
		Long: `dev starts, from nothing, a local three-region cluster: regions us-east,
eu-west and ap-south with gateways on 127.0.0.1 ports --port-base, +1, +2; an
embedded three-member etcd cluster; a throwaway PostgreSQL (or --database-url);
and the demo payments service (port-base+100) and bank (port-base+101).
It prints the URLs and a bearer token for actor "demo", and on Ctrl-C stops
everything and removes its temporary data.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(logFormat, logLvl)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			fmt.Fprintln(cmd.ErrOrStderr(), "starting PostgreSQL, etcd, demo services and three regions...")
			c, err := devcluster.Start(ctx, devcluster.Options{PortBase: portBase, DatabaseURL: dbURL, Logger: log})
			if err != nil {
				return err
			}
			defer func() {
				sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				c.Close(sctx)
				os.Remove(devcluster.StatePath())
				fmt.Fprintln(cmd.ErrOrStderr(), "stopped; temporary data removed")
			}()
			if err := devcluster.WriteState(devcluster.StatePath(), c.State()); err != nil {
				return err
			}
			token, err := c.Token("demo", 24*time.Hour)
			if err != nil {
				return err
			}
			printCluster(cmd.OutOrStdout(), c, token)
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().IntVar(&portBase, "port-base", devcluster.DefaultPortBase, "port of the first region's gateway; the others follow")
	cmd.Flags().StringVar(&dbURL, "database-url", "", "use this PostgreSQL/CockroachDB URL instead of a throwaway PostgreSQL")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: json or text")
	cmd.Flags().StringVar(&logLvl, "log-level", "warn", "log level: debug, info, warn or error")
	return cmd
}

func printCluster(w io.Writer, c *devcluster.Cluster, token string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tURL")
	for _, r := range c.Regions {
		fmt.Fprintf(tw, "region %s\t%s\n", r.Name, r.URL)
	}
	fmt.Fprintf(tw, "payments (upstream)\t%s\n", c.PaymentsURL)
	fmt.Fprintf(tw, "bank (downstream)\t%s\n", c.BankURL)
	for i, e := range c.Etcd.Endpoints() {
		fmt.Fprintf(tw, "etcd member %d\t%s\n", i+1, e)
	}
	fmt.Fprintf(tw, "metrics\t%s/metrics\n", c.Regions[0].URL)
	tw.Flush()
	fmt.Fprintf(w, "\nBearer token for actor \"demo\" (24h):\n\n  export TOKEN=%s\n\n", token)
	fmt.Fprintf(w, "Try a payment, then retry it (same key) in another region:\n\n")
	fmt.Fprintf(w, "  curl -si %s/v1/payments -H \"Authorization: Bearer $TOKEN\" -H 'Idempotency-Key: order-1' \\\n    -d '{\"amount\":\"12.50\",\"currency\":\"EUR\",\"reference\":\"order-1\"}'\n", c.Regions[0].URL)
	fmt.Fprintf(w, "  curl -si %s/v1/payments -H \"Authorization: Bearer $TOKEN\" -H 'Idempotency-Key: order-1' \\\n    -d '{\"amount\":\"12.50\",\"currency\":\"EUR\",\"reference\":\"order-1\"}'\n\n", c.Regions[1].URL)
	fmt.Fprintln(w, "Ctrl-C stops everything.")
}
