package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// opListMaxLimit is the largest page: a page is one transaction reading
// the rows it shows.
const opListMaxLimit = 1000

// opRow is one operation as `op list -o json` prints it.
type opRow struct {
	OperationID    string `json:"operation_id"`
	State          string `json:"state"`
	Actor          string `json:"actor"`
	Endpoint       string `json:"endpoint"`
	Shard          int    `json:"shard"`
	Epoch          int64  `json:"epoch"`
	Attempts       int    `json:"attempts"`
	LastStage      string `json:"last_stage"`
	UpdatedAt      string `json:"updated_at"`
	LeaseExpiresAt string `json:"lease_expires_at,omitempty"`
}

// opListOptions are the flags of `idemctl op list`, read by its run.
type opListOptions struct {
	sf                   connFlags
	af                   auditFlags
	reg, endpoint, after string
	format               string
	states               []string
	shard, limit         int
	olderThan            time.Duration
}

func opListCmd() *cobra.Command {
	var opts opListOptions
	cmd := &cobra.Command{
		Use:   "list (--region R | --shard N) [--state S]... [--endpoint E] [--older-than D]",
		Short: "List the operations a region or a shard left in flight (a read; the access is logged)",
		Long: `list shows the operations of a region's shards (the shards whose home is R:
the ones a failover of R moves) or of one shard, by default those left
IN_PROGRESS or OUTCOME_UNKNOWN: what "idemctl failover accept" asks you to
reconcile first ("idemctl op get ID", then "idemctl op reconcile ID").
--older-than keeps operations not updated for that long (by the database's
clock). Rows come oldest change first, --limit at a time; a full page ends with
the --after cursor of the next one. The regions list and the store come from
--config (or the running dev cluster). A read: the access is audited.`,
		Example: `  idemctl op list --region us-east --config idemd.yaml
  idemctl op list --shard 17 --state OUTCOME_UNKNOWN --older-than 10m -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd)
		},
	}
	opts.sf.addStore(cmd)
	opts.af.add(cmd, "why you are looking (optional; logged with the access)")
	cmd.Flags().StringVar(&opts.reg, "region", "", "list the operations of the shards whose home is this region")
	cmd.Flags().IntVar(&opts.shard, "shard", 0, "list the operations of this shard")
	cmd.Flags().StringSliceVar(&opts.states, "state", []string{string(idempotency.InProgress), string(idempotency.OutcomeUnknown)},
		"keep operations in these states (repeatable or comma-separated)")
	cmd.Flags().StringVar(&opts.endpoint, "endpoint", "", "keep one endpoint's operations (its name in the configuration)")
	cmd.Flags().DurationVar(&opts.olderThan, "older-than", 0, "keep operations not updated for this long (e.g. 10m)")
	cmd.Flags().IntVar(&opts.limit, "limit", 100, "rows per page (at most 1000)")
	cmd.Flags().StringVar(&opts.after, "after", "", "the cursor a full page printed: the next page")
	addOutputFlag(cmd, &opts.format)
	return cmd
}

// dash is s, or "-" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// run is `idemctl op list`'s work, its flags read into opts.
func (opts *opListOptions) run(cmd *cobra.Command) error {
	hasShard := cmd.Flags().Changed("shard")
	var errs []error
	errs = append(errs, checkOutput(opts.format))
	if hasShard == (opts.reg != "") {
		errs = append(errs, errors.New("give exactly one of --region R and --shard N"))
	}
	for _, st := range opts.states {
		if s := idempotency.State(strings.ToUpper(st)); !s.Valid() {
			errs = append(errs, fmt.Errorf("--state %q: not a state (IN_PROGRESS, OUTCOME_UNKNOWN, COMPLETED, RETRYABLE_FAILURE, TERMINAL_FAILURE, CANCELLED, PENDING)", st))
		}
	}
	if opts.limit < 1 || opts.limit > opListMaxLimit {
		errs = append(errs, fmt.Errorf("--limit: must be within 1 and %d, got %d", opListMaxLimit, opts.limit))
	}
	if opts.olderThan < 0 {
		errs = append(errs, fmt.Errorf("--older-than: must not be negative, got %s", opts.olderThan))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	top, cfg, err := opts.sf.topology()
	if err != nil {
		return err
	}
	f := store.OperationFilter{Endpoint: opts.endpoint, OlderThan: opts.olderThan, Limit: opts.limit, After: opts.after}
	for _, st := range opts.states {
		f.States = append(f.States, strings.ToUpper(st))
	}
	switch {
	case hasShard && (opts.shard < 0 || opts.shard >= cfg.Shards):
		return fmt.Errorf("--shard: must be within 0 and %d, got %d", cfg.Shards-1, opts.shard)
	case hasShard:
		f.Shards = []int{opts.shard}
	case !top.Has(opts.reg):
		return fmt.Errorf("--region: %q is not a region of the topology %v", opts.reg, top.Names())
	default:
		for sh := range cfg.Shards {
			if top.Home(sh) == opts.reg {
				f.Shards = append(f.Shards, sh)
			}
		}
	}
	s, err := opts.sf.open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	operator, reason := opts.af.forRead()
	page, err := s.ListOperations(cmd.Context(), operator, reason, f)
	if err != nil {
		return err
	}
	rows := []opRow{}
	t := table{header: []string{"OPERATION", "STATE", "ACTOR", "ENDPOINT", "SHARD", "EPOCH", "ATTEMPTS", "LAST_STAGE", "UPDATED", "LEASE_EXPIRES"}}
	for _, r := range page.Operations {
		row := opRow{OperationID: r.OperationID.String(), State: string(r.State), Actor: r.Scope.Actor,
			Endpoint: r.Scope.Endpoint, Shard: r.Token.Shard, Epoch: r.Token.Epoch, Attempts: r.Attempts,
			LastStage: r.LastStage, UpdatedAt: r.UpdatedAt.UTC().Format(time.RFC3339)}
		if !r.LeaseExpiresAt.IsZero() {
			row.LeaseExpiresAt = r.LeaseExpiresAt.UTC().Format(time.RFC3339)
		}
		rows = append(rows, row)
		t.rows = append(t.rows, []string{row.OperationID, row.State, row.Actor, row.Endpoint, strconv.Itoa(row.Shard),
			strconv.FormatInt(row.Epoch, 10), strconv.Itoa(row.Attempts), dash(row.LastStage), row.UpdatedAt, dash(row.LeaseExpiresAt)})
	}
	if opts.format == outputJSON {
		t.v = map[string]any{"operations": rows, "next": page.Next}
		return render(cmd.OutOrStdout(), opts.format, t)
	}
	if len(rows) == 0 && opts.after == "" {
		// Nothing to reconcile: said in words, not as an empty table.
		where := fmt.Sprintf("the shards whose home is %s", opts.reg)
		if hasShard {
			where = fmt.Sprintf("shard %d", opts.shard)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "no operation %s on %s\n", strings.Join(f.States, " or "), where)
		return nil
	}
	if err := render(cmd.OutOrStdout(), opts.format, t); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "%d shown, more follow: add --after %s\n", len(rows), page.Next)
	} else {
		fmt.Fprintln(cmd.OutOrStdout(), count(len(rows), "operation", "operations"))
	}
	return nil
}
