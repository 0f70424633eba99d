package main

import (
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

func opCmd() *cobra.Command {
	op := &cobra.Command{
		Use:   "op",
		Short: "Look up operations, and repair them (every repair audited)",
		Long: `op get reads an operation by id, op find by its key; reads need no reason.
op reconcile, purge and cleanup are repairs:
each needs --operator (default $USER) and --reason, and writes a repair_audit
row in the same transaction as its change.`,
	}
	op.AddCommand(opGetCmd(), opFindCmd(), opListCmd(), opReconcileCmd(), opPurgeCmd(), opCleanupCmd())
	return op
}

func opGetCmd() *cobra.Command {
	var sf connFlags
	var af auditFlags
	var format string
	cmd := &cobra.Command{
		Use:   "get OPERATION_ID",
		Short: "Show an operation by id (a read: no reason needed; the access is logged)",
		Args:  oneArg("OPERATION_ID, the X-Idempotency-Operation-Id of a response"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			id, err := uuid.Parse(args[0])
			if err != nil {
				return fmt.Errorf("OPERATION_ID %q is not a UUID (it is the X-Idempotency-Operation-Id of a response)", args[0])
			}
			s, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			operator, reason := af.forRead()
			rec, err := s.AdminLookup(cmd.Context(), operator, reason, id)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("operation %s: %w (expired and cleaned up, or another store's: check --config or --dsn)", id, err)
			}
			if err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), format, recordTable(rec))
		},
	}
	sf.addStore(cmd)
	af.add(cmd, "why you are looking (optional; logged with the access)")
	addOutputFlag(cmd, &format)
	return cmd
}

// opReconcileOptions are the flags of `idemctl op reconcile`, read by its run.
type opReconcileOptions struct {
	sf           connFlags
	af           auditFlags
	ran, notRun  bool
	status       int
	body, format string
	headers      []string
}

func opReconcileCmd() *cobra.Command {
	var opts opReconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile OPERATION_ID (--ran --status N [--body BODY] [--header 'Name: value']... | --not-run) --reason TEXT",
		Short: "Settle an OUTCOME_UNKNOWN operation, or one past its downstream window, after checking the downstream (a repair, audited)",
		Long: `reconcile records what the downstream says about an operation whose outcome
is unknown: --ran with the response the downstream produced (the record becomes
COMPLETED and retries replay it), or --not-run (RETRYABLE_FAILURE: the next retry
runs it). The change and its audit row commit together.

On an endpoint with a downstream_window it also settles what the gateway will
never send again because it was first claimed longer ago than the window (its
retries answer 409 downstream-window-passed): a RETRYABLE_FAILURE (--ran only),
or a PENDING or IN_PROGRESS whose lease has expired (--ran, or --not-run:
RETRYABLE_FAILURE; retries stay refused, and the client may send the intent
again under a new key).

The answer is built as the gateway builds one from the upstream, from the
operation's endpoint in --config (or the dev cluster's configuration): a JSON
endpoint's --body must be valid JSON and is replayed as application/json (or
the JSON type --header gives); another endpoint's body needs --header
"Content-Type: TYPE"; --header sets only the endpoint's response_headers
(default Content-Type and Location: give Location for a created resource).`,
		Example: `  idemctl op reconcile 0f9d...-... --ran --status 201 --body '{"payment_id":"p-1"}' \
      --header "Location: /v1/payments/p-1" --reason "INC-7: charge found at the PSP"`,
		Args: oneArg("OPERATION_ID, the X-Idempotency-Operation-Id of a response"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd, args)
		},
	}
	opts.sf.addStore(cmd)
	opts.af.add(cmd, "why, e.g. a ticket (required; recorded in repair_audit)")
	cmd.Flags().BoolVar(&opts.ran, "ran", false, "the downstream ran it")
	cmd.Flags().BoolVar(&opts.notRun, "not-run", false, "the downstream provably did not run it")
	cmd.Flags().IntVar(&opts.status, "status", 0, "with --ran: the HTTP status of its response")
	cmd.Flags().StringVar(&opts.body, "body", "", "with --ran: the response body (valid JSON for a JSON endpoint)")
	cmd.Flags().StringArrayVar(&opts.headers, "header", nil,
		"with --ran: a response header \"Name: value\" of the endpoint's response_headers (e.g. Location); repeatable")
	addOutputFlag(cmd, &opts.format)
	return cmd
}

// run is `idemctl op reconcile`'s work, its flags read into opts.
func (opts *opReconcileOptions) run(cmd *cobra.Command, args []string) error {
	if err := checkOutput(opts.format); err != nil {
		return err
	}
	id, err := uuid.Parse(args[0])
	if err != nil {
		return fmt.Errorf("OPERATION_ID %q is not a UUID (it is the X-Idempotency-Operation-Id of a response)", args[0])
	}
	res := store.Result{State: idempotency.RetryableFailure, ErrorSummary: "reconciled: downstream did not run it"}
	switch {
	case opts.ran == opts.notRun:
		// Checked here, not with cobra's flag groups: their errors name
		// "the group [ran not-run]", not what to do.
		return fmt.Errorf("give exactly one of --ran (with --status N: the downstream ran it) and --not-run (it provably did not)")
	case opts.ran && !cmd.Flags().Changed("status"):
		return fmt.Errorf("--ran needs --status N: the HTTP status the downstream answered")
	case opts.ran && (opts.status < 100 || opts.status > 599):
		return fmt.Errorf("--status %d is not an HTTP status (100-599)", opts.status)
	case !opts.ran && (cmd.Flags().Changed("status") || cmd.Flags().Changed("body") || len(opts.headers) > 0):
		return fmt.Errorf("--status, --body and --header describe what ran: use them with --ran, not --not-run")
	}
	if err := opts.af.checkRepair(); err != nil {
		return err
	}
	s, err := opts.sf.open(cmd.Context())
	if err != nil {
		return err
	}
	defer s.Close()
	rec, err := s.AdminLookup(cmd.Context(), opts.af.operator, "reconcile: "+opts.af.reason, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("operation %s: %w: nothing reconciled", id, err)
	}
	if err != nil {
		return err
	}
	unknown := rec.State == idempotency.OutcomeUnknown
	switch rec.State {
	case idempotency.OutcomeUnknown, idempotency.RetryableFailure, idempotency.Pending, idempotency.InProgress:
	default:
		return fmt.Errorf("operation %s is %s, not OUTCOME_UNKNOWN (%w): nothing to reconcile, nothing changed",
			id, rec.State, store.ErrNotUnknown)
	}
	var ep config.Endpoint
	if opts.ran || !unknown {
		if ep, err = opts.sf.endpointOf(rec.Scope.Endpoint); err != nil {
			if !unknown {
				return fmt.Errorf("operation %s is %s, not OUTCOME_UNKNOWN: it is reconciled only past its endpoint's "+
					"downstream_window, which needs the endpoint's declaration: %w", id, rec.State, err)
			}
			return err
		}
	}
	if !unknown && ep.DownstreamWindow <= 0 {
		return fmt.Errorf("operation %s is %s, not OUTCOME_UNKNOWN, and its endpoint %s has no downstream_window: "+
			"nothing to reconcile, nothing changed", id, rec.State, ep.Name)
	}
	if opts.ran {
		snap, err := reconciledSnapshot(ep, opts.status, opts.body, opts.headers)
		if err != nil {
			return err
		}
		res = store.Result{State: idempotency.Completed, Snapshot: snap}
	}
	if unknown {
		err = s.ReconcileUnknown(cmd.Context(), opts.af.operator, opts.af.reason, id, res)
	} else {
		// Past the downstream window: the gateway never sends it again,
		// so a RETRYABLE_FAILURE or a stranded IN_PROGRESS is settled
		// here too (docs/runbook.md, "Past the downstream window").
		err = s.ReconcilePastWindow(cmd.Context(), opts.af.operator, opts.af.reason, id, ep.DownstreamWindow, res)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrNotUnknown) || errors.Is(err, store.ErrNotPastWindow) {
			// Which operation, and that nothing changed (idemctl op get shows its state).
			return fmt.Errorf("operation %s: %w: nothing reconciled, nothing changed (idemctl op get %s shows it)", id, err, id)
		}
		return err
	}
	return render(cmd.OutOrStdout(), opts.format, table{header: []string{"OPERATION", "STATE", "AUDITED AS"},
		rows: [][]string{{id.String(), string(res.State), opts.af.operator}},
		v:    map[string]any{"operation_id": id, "state": res.State, "operator": opts.af.operator, "reason": opts.af.reason}})
}
