package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
)

func runCmd() *cobra.Command {
	var file, logFormat, logLevel string
	var migrate bool
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Serve one region from a YAML configuration",
		Long: `run loads the configuration, connects to the SQL store and etcd, and serves
the gateway on the configured listen address until SIGINT or SIGTERM.
/metrics, /healthz and /readyz are served on the same address.

On SIGTERM it stops accepting connections, lets in-flight requests finish
and record their results for up to drain_timeout, revokes its liveness
lease and exits 0. It exits non-zero when the listener fails.

The store's schema must exist (idemctl migrate); --migrate applies it at
start instead, for a first deployment.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := newLogger(logFormat, logLevel)
			if err != nil {
				return err
			}
			cfg, err := config.Load(file)
			if err != nil {
				return err
			}
			// The secrets are read before anything connects: a missing
			// one is the configuration's mistake, said at once, not after
			// the store and etcd were reached (or timed out).
			if _, err := cfg.AuthConfig(); err != nil {
				return err
			}
			opts := daemon.Options{Logger: log, Migrate: migrate}
			stopDrill, err := startDrill(cfg, &opts, log) // refused outside the drill build
			if err != nil {
				return err
			}
			defer stopDrill()
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			d, err := daemon.Start(ctx, cfg, opts)
			if err != nil {
				return err
			}
			select {
			case <-ctx.Done():
			case <-d.Done():
				// The listener failed: stop everything else and exit
				// non-zero, so the orchestrator restarts the instance.
				sctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
				defer cancel()
				return errors.Join(d.Err(), d.Shutdown(sctx))
			}
			stop() // a second signal kills the process at once
			log.Info("draining", "drain_timeout", cfg.DrainTimeout.String())
			sctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
			defer cancel()
			if err := d.Shutdown(sctx); err != nil {
				return err
			}
			log.Info("drained and stopped")
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "path to the region's YAML configuration (required)")
	cmd.Flags().StringVar(&logFormat, "log-format", "json", "log format: json or text")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	cmd.Flags().BoolVar(&migrate, "migrate", false, "apply the store's schema migrations at start (first deployment)")
	cmd.MarkFlagRequired("config")
	return cmd
}

func checkConfigCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check-config FILE",
		Short: "Validate a configuration file and report every error",
		Long: `check-config parses FILE and reports every problem at once, one per line,
as field.path: reason (with the line of the file where there is one). It
exits 0 when the file is valid, 1 otherwise. A secret read from an
environment variable (auth.hs256_secret_env) must be set, as for run.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("check-config takes one FILE (idemd check-config idemd.yaml), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := config.Load(args[0])
			if err == nil {
				_, err = cfg.AuthConfig()
			}
			var verr *config.ValidationError
			if errors.As(err, &verr) {
				for _, fe := range verr.ByLine() {
					fmt.Fprintln(cmd.ErrOrStderr(), fe.Located())
				}
				if n := len(verr.Errors); n == 1 {
					return fmt.Errorf("%s: 1 error", args[0])
				}
				return fmt.Errorf("%s: %d errors", args[0], len(verr.Errors))
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (region %s, %d endpoints)\n", args[0], cfg.Region, len(cfg.Endpoints))
			return nil
		},
	}
}
