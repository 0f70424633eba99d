package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/crdb"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/idempotency"
)

// storeFlags are the flags every store command shares.
type storeFlags struct {
	dsn, operator, reason string
}

func (f *storeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dsn, "dsn", os.Getenv("IDEMCOORD_DSN"), "store URL (default $IDEMCOORD_DSN, else the running dev cluster's)")
	cmd.Flags().StringVar(&f.operator, "operator", os.Getenv("USER"), "who is doing this (recorded in the repair audit)")
	cmd.Flags().StringVar(&f.reason, "reason", "", "why (recorded in the repair audit; required)")
}

func (f *storeFlags) open(ctx context.Context) (*crdb.Store, error) {
	dsn := f.dsn
	if dsn == "" {
		st, err := devcluster.ReadState(devcluster.StatePath())
		if err != nil {
			return nil, fmt.Errorf("--dsn not set: %w", err)
		}
		dsn = st.DSN
	}
	return crdb.Open(ctx, crdb.Config{DSN: dsn, MaxConns: 2})
}

func opCmd() *cobra.Command {
	op := &cobra.Command{Use: "op", Short: "Look up and repair operations (every action audited)"}
	var f storeFlags
	get := &cobra.Command{
		Use:   "get OPERATION_ID --reason TEXT",
		Short: "Show an operation by id (audited)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("OPERATION_ID: %w", err)
			}
			s, err := f.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			rec, err := s.AdminLookup(cmd.Context(), f.operator, f.reason, id)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(map[string]any{"operation_id": rec.OperationID, "actor": rec.Scope.Actor,
				"endpoint": rec.Scope.Endpoint, "state": rec.State, "version": rec.Version, "attempts": rec.Attempts,
				"last_stage": rec.LastStage, "shard": rec.Token.Shard, "epoch": rec.Token.Epoch,
				"status": rec.Snapshot.Status, "error": rec.ErrorSummary, "purged": rec.Purged,
				"created_at": rec.CreatedAt, "updated_at": rec.UpdatedAt, "expires_at": rec.ExpiresAt})
		},
	}
	f.add(get)
	var rf storeFlags
	var ran bool
	var status int
	var body string
	reconcile := &cobra.Command{
		Use:   "reconcile OPERATION_ID (--ran --status N --body JSON | --not-run) --reason TEXT",
		Short: "Settle an OUTCOME_UNKNOWN operation after checking the downstream (audited)",
		Long: `reconcile records what the downstream says about an operation whose outcome
is unknown: --ran with the response the downstream produced (the record becomes
COMPLETED and retries replay it), or --not-run (RETRYABLE_FAILURE: the next retry
runs it). The change and its audit row commit together.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("OPERATION_ID: %w", err)
			}
			res := crdb.Result{State: idempotency.RetryableFailure, ErrorSummary: "reconciled: downstream did not run it"}
			if ran {
				if status < 100 || status > 599 {
					return fmt.Errorf("--status: %d is not an HTTP status", status)
				}
				res = crdb.Result{State: idempotency.Completed, Snapshot: crdb.Snapshot{Status: status, Body: []byte(body)}}
			}
			s, err := rf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.ReconcileUnknown(cmd.Context(), rf.operator, rf.reason, id, res); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "operation %s: %s\n", id, res.State)
			return nil
		},
	}
	rf.add(reconcile)
	reconcile.Flags().BoolVar(&ran, "ran", false, "the downstream ran it")
	reconcile.Flags().Bool("not-run", false, "the downstream provably did not run it")
	reconcile.Flags().IntVar(&status, "status", 0, "with --ran: the HTTP status of its response")
	reconcile.Flags().StringVar(&body, "body", "", "with --ran: the response body")
	reconcile.MarkFlagsOneRequired("ran", "not-run")
	reconcile.MarkFlagsMutuallyExclusive("ran", "not-run")
	var pf storeFlags
	var actor string
	purge := &cobra.Command{
		Use:   "purge --actor SCOPE --reason TEXT",
		Short: "Remove an actor's stored bodies and personal fields, keeping dedup markers (audited)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := pf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := s.Purge(cmd.Context(), pf.operator, pf.reason, actor)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "purged %d records of %s\n", n, actor)
			return nil
		},
	}
	pf.add(purge)
	purge.Flags().StringVar(&actor, "actor", "", "actor scope, tenant/subject (required)")
	purge.MarkFlagRequired("actor")
	var cf storeFlags
	var batch int
	cleanup := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete expired finished records in bounded batches until none is left",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch <= 0 {
				batch = crdb.DefaultCleanupBatch
			}
			s, err := cf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			total := 0
			for cmd.Context().Err() == nil {
				n, err := s.Cleanup(cmd.Context(), batch)
				if err != nil {
					return err
				}
				total += n
				if n < batch {
					break
				}
			}
			if err := cmd.Context().Err(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %d expired records\n", total)
			return nil
		},
	}
	cf.add(cleanup)
	cleanup.Flags().IntVar(&batch, "batch", crdb.DefaultCleanupBatch, "rows per delete statement")
	op.AddCommand(get, reconcile, purge, cleanup)
	return op
}
