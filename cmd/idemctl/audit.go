package main

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/store"
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

// auditOptions are the flags of `idemctl audit`, read by its run.
type auditOptions struct {
	sf                                      connFlags
	since, actor, operation, action, output string
	shard, limit, offset                    int
}

func auditCmd() *cobra.Command {
	var opts auditOptions
	cmd := &cobra.Command{
		Use:   "audit [--since DURATION|TIME] [--action A] [--shard N | --actor A | --operation ID] [--limit N] [--offset N]",
		Short: "Show the repair audit: who changed what, when and why",
		Long: `audit lists the repair audit, newest first: every shard move and its fence
bump (move_fence), every controller failover (region_failover), failover,
failback, drain and accept, and every operation repair (lookups, reconciles,
purges). --since keeps rows of the last DURATION (90m, 24h) or from an RFC 3339
TIME; --shard keeps a shard's moves and accepts; --actor an actor scope's
repairs; --operation one operation's; --action one action's. It shows --limit
rows at a time and says how many the selection holds ("100 of 343 shown");
--offset N shows the rows after the first N.`,
		Example: `  idemctl audit --since 24h
  idemctl audit --action failback --since 2h
  idemctl audit --since 1h --offset 100
  idemctl audit --shard 17 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd)
		},
	}
	opts.sf.addStore(cmd)
	cmd.Flags().StringVar(&opts.since, "since", "", "keep rows of the last DURATION (90m) or from an RFC 3339 TIME")
	cmd.Flags().IntVar(&opts.shard, "shard", 0, "keep rows about this shard")
	cmd.Flags().StringVar(&opts.actor, "actor", "", "keep rows about this actor scope (tenant/subject)")
	cmd.Flags().StringVar(&opts.operation, "operation", "", "keep rows about this operation id")
	cmd.Flags().StringVar(&opts.action, "action", "", "keep rows of this action (move_fence, region_failover, failover, failback, drain, failover_accept, reconcile, ...)")
	cmd.Flags().IntVar(&opts.limit, "limit", 100, "at most this many rows")
	cmd.Flags().IntVar(&opts.offset, "offset", 0, "skip this many rows of the selection first (the next page)")
	addOutputFlag(cmd, &opts.output)
	return cmd
}

// auditFooter says how much of the selection a page shows, and how to see
// the rest.
func auditFooter(shown, total, offset int) string {
	switch {
	case total == 0:
		return "no audit rows match"
	case shown == total:
		return fmt.Sprintf("%d of %d shown", shown, total)
	case offset+shown < total:
		return fmt.Sprintf("%d of %d shown (rows %d-%d); next: --offset %d", shown, total, offset+1, offset+shown, offset+shown)
	}
	return fmt.Sprintf("%d of %d shown (rows %d-%d)", shown, total, offset+1, offset+shown)
}

// run is `idemctl audit`'s work, its flags read into opts.
func (opts *auditOptions) run(cmd *cobra.Command) error {
	if err := checkOutput(opts.output); err != nil {
		return err
	}
	if opts.limit < 1 || opts.limit > 10000 {
		return fmt.Errorf("--limit: must be within 1 and 10000, got %d", opts.limit)
	}
	if opts.offset < 0 {
		return fmt.Errorf("--offset: must not be negative, got %d", opts.offset)
	}
	if given := countTrue(cmd.Flags().Changed("shard"), opts.actor != "", opts.operation != ""); given > 1 {
		return fmt.Errorf("give at most one of --shard, --actor and --operation: each selects the rows of one thing")
	}
	f := store.AuditFilter{Actor: opts.actor, Action: opts.action, Limit: opts.limit, Offset: opts.offset}
	var err error
	if f.Since, err = parseSince(opts.since, time.Now()); err != nil {
		return err
	}
	if cmd.Flags().Changed("shard") {
		if opts.shard < 0 {
			return fmt.Errorf("--shard: must not be negative, got %d", opts.shard)
		}
		f.Shard = &opts.shard
	}
	if opts.operation != "" {
		id, err := uuid.Parse(opts.operation)
		if err != nil {
			return fmt.Errorf("--operation: %w", err)
		}
		f.Operation = &id
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	s, err := opts.sf.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	rows, err := s.QueryAudit(ctx, f)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []store.AuditRow{}
	}
	total, err := s.CountAudit(ctx, f)
	if err != nil {
		return err
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
	if opts.output == outputJSON {
		t.v = map[string]any{"rows": rows, "total": total, "offset": opts.offset}
		return render(cmd.OutOrStdout(), opts.output, t)
	}
	if err := render(cmd.OutOrStdout(), opts.output, t); err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), auditFooter(len(rows), total, opts.offset))
	return nil
}

// countTrue counts the true values.
func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
