package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/crdb"
)

// parseSince reads --since: a duration back from now ("1h") or a time
// (RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("--since: a duration back from now must be positive, got %s", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since: want a duration (90m) or an RFC 3339 time (2026-01-02T15:04:05Z), got %q", s)
	}
	return t, nil
}

func auditCmd() *cobra.Command {
	var sf connFlags
	var since, actor, operation, output string
	var shard, limit int
	cmd := &cobra.Command{
		Use:   "audit [--since DURATION|TIME] [--shard N | --actor A | --operation ID]",
		Short: "Show the repair audit: who changed what, when and why",
		Long: `audit lists the repair audit, newest first: every shard move and its fence
bump (move_fence), every controller failover (region_failover), failover,
failback, drain and accept, and every operation repair (lookups, reconciles,
purges). --since keeps rows of the last DURATION (90m, 24h) or from an RFC 3339
TIME; --shard keeps a shard's moves and accepts; --actor an actor scope's
repairs; --operation one operation's.`,
		Example: `  idemctl audit --since 24h
  idemctl audit --shard 17 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			f := crdb.AuditFilter{Actor: actor, Limit: limit}
			var err error
			if f.Since, err = parseSince(since, time.Now()); err != nil {
				return err
			}
			if cmd.Flags().Changed("shard") {
				if shard < 0 {
					return fmt.Errorf("--shard: must not be negative, got %d", shard)
				}
				f.Shard = &shard
			}
			if operation != "" {
				id, err := uuid.Parse(operation)
				if err != nil {
					return fmt.Errorf("--operation: %w", err)
				}
				f.Operation = &id
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			rows, err := s.QueryAudit(ctx, f)
			if err != nil {
				return err
			}
			if rows == nil {
				rows = []crdb.AuditRow{}
			}
			t := table{header: []string{"AT", "OPERATOR", "ACTION", "REASON", "DETAIL", "OPERATION", "ACTOR"}, v: rows}
			for _, r := range rows {
				op := ""
				if r.OperationID != nil {
					op = r.OperationID.String()
				}
				t.rows = append(t.rows, []string{r.At.UTC().Format(time.RFC3339), r.Operator, r.Action, r.Reason,
					r.Detail, op, r.ActorScope})
			}
			return render(cmd.OutOrStdout(), output, t)
		},
	}
	sf.addStore(cmd)
	cmd.Flags().StringVar(&since, "since", "", "keep rows of the last DURATION (90m) or from an RFC 3339 TIME")
	cmd.Flags().IntVar(&shard, "shard", 0, "keep rows about this shard")
	cmd.Flags().StringVar(&actor, "actor", "", "keep rows about this actor scope (tenant/subject)")
	cmd.Flags().StringVar(&operation, "operation", "", "keep rows about this operation id")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many rows")
	cmd.MarkFlagsMutuallyExclusive("shard", "actor", "operation")
	addOutputFlag(cmd, &output)
	return cmd
}
