package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/ledger"
	"github.com/idemcoord/idemcoord/store"
)

// incidentLookback is how far back `incident list` and `incident report
// ID` look by default: a failover left open is still found a month on.
const incidentLookback = "720h"

func incidentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "incident",
		Short: "The incident ledger: which intents a failover, failback, drain, accept or move touched, and how each ended",
		Long: `incident reads the incident ledger: "incident list" shows the incidents of the
repair audit (each region failover, failback, drain, accept of a new owner and
shard move by hand) with their time windows, regions and shards; "incident
report ID" (or --from/--to) lists every intent such a window touched, one line
each: in flight, held, refused, transferred, resolved or left unknown, what the
coordinator did, the final state and whether a person must act. See
docs/runbook.md, "After an incident: reconcile with the ledger".`,
	}
	cmd.AddCommand(incidentListCmd(), incidentReportCmd())
	return cmd
}

// incidentFlags are what both subcommands read the audit with.
type incidentFlags struct {
	sf    connFlags
	since string
}

func (f *incidentFlags) add(cmd *cobra.Command) {
	f.sf.addStore(cmd)
	cmd.Flags().StringVar(&f.since, "since", incidentLookback, "look at the audit of the last DURATION (720h) or from an RFC 3339 TIME")
}

// incidents reads the incidents of the audit since f.since.
func (f *incidentFlags) incidents(ctx context.Context, s store.Auditor, now time.Time) ([]ledger.Incident, error) {
	since, err := parseSince(f.since, now)
	if err != nil {
		return nil, err
	}
	return ledger.FromAudit(ctx, s, since, now)
}

func incidentListCmd() *cobra.Command {
	var (
		f      incidentFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "list [--since DURATION|TIME]",
		Short: "List the incidents of the repair audit with their windows, regions and shards",
		Long: `list derives the incidents from the repair audit, oldest first: each region
failover (by the controller or idemctl failover), failback, drain, accept of a
new owner (the accepts of one operator and reason are one incident), shard
move by hand and store outage. An incident's window runs from its first fence
move to its last; a failover's runs on until the failback or accept that ended
it (ENDED BY), and is "open" while nothing has; a store outage's (store_outage,
on all shards) from the first store call a gateway found unavailable to the
first answered again, the overlapping windows of a region's instances as one.
ID is what "idemctl incident report" takes.`,
		Example: `  idemctl incident list --config idemd.yaml
  idemctl incident list --since 24h -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 60*time.Second)
			defer cancel()
			s, err := f.sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			all, err := f.incidents(ctx, s, time.Now())
			if err != nil {
				return err
			}
			if all == nil {
				all = []ledger.Incident{}
			}
			t := table{header: []string{"ID", "KIND", "REGION", "FROM", "TO", "SHARDS", "ENDED BY", "OPERATOR", "REASON"},
				v: map[string]any{"incidents": all}}
			for _, in := range all {
				to := in.To.UTC().Format(time.RFC3339)
				if in.Open {
					to = "open"
				}
				shards := fmt.Sprint(len(in.Shards))
				if in.Kind == ledger.KindStoreOutage {
					shards = "all" // the store refused every shard's requests
				}
				t.rows = append(t.rows, []string{in.ID, in.Kind, dash(in.Region), in.From.UTC().Format(time.RFC3339), to,
					shards, dash(in.EndedBy), in.Operator, in.Reason})
			}
			if format == outputTable && len(all) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no incident in the audit since %s\n", f.since)
				return nil
			}
			return render(cmd.OutOrStdout(), format, t)
		},
	}
	f.add(cmd)
	addOutputFlag(cmd, &format)
	return cmd
}

// incidentReportOptions are the flags of `idemctl incident report`.
type incidentReportOptions struct {
	f                incidentFlags
	af               auditFlags
	from, to, format string
	page             int
}

func incidentReportCmd() *cobra.Command {
	var o incidentReportOptions
	cmd := &cobra.Command{
		Use:   "report (ID | --from TIME --to TIME) [-o table|json|csv]",
		Short: "List every intent an incident's window touched, how each ended, and what a person must do (a read; the access is audited)",
		Long: `report lists, one line per intent (actor, endpoint, key hash, operation), every
intent the window of incident ID touched on its shards, or every intent of
--from/--to on every shard:

  in_flight    running when the incident began and not taken over (or finished
               by its own region)
  held         asked to come back (503) while its shard was between owners
  refused      refused by its endpoint's failover policy (reject)
  transferred  taken over by the region that took its shard over
  resolved     an unknown outcome settled through the resolve path or by
               idemctl op reconcile
  unknown      OUTCOME_UNKNOWN now: nobody knows whether it ran

with its state when the incident began, what the coordinator did, its final
state (NOT_RUN: only held or refused, and never run since) and whether a person
must act (MUST_ACT, with the next step). A summary line per class follows.
The key is shown as its SHA-256 (the raw key is never stored); the table shows
its first 16 hex digits, JSON and CSV all 64. CSV puts the summary on stderr.
The store is read in keyset pages of --page rows and the output is streamed:
memory stays bounded on a store of millions of records. A read of actor
scopes: the access is written to the repair audit.`,
		Example: `  idemctl incident report 3f2a9c1e --config idemd.yaml
  idemctl incident report 3f2a9c1e -o csv > ledger.csv
  idemctl incident report --from 2026-12-06T14:00:00Z --to 2026-12-06T15:00:00Z -o json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args)
		},
	}
	o.f.add(cmd)
	o.af.add(cmd, "why you are looking (optional; logged with the access)")
	cmd.Flags().StringVar(&o.from, "from", "", "start of the window (RFC 3339), instead of an incident ID")
	cmd.Flags().StringVar(&o.to, "to", "", "end of the window (RFC 3339; default now)")
	cmd.Flags().IntVar(&o.page, "page", store.DefaultLedgerPage, "rows per store read (at most 5000): the memory a report holds")
	cmd.Flags().StringVarP(&o.format, "output", "o", ledger.FormatTable, "output format: table, json or csv")
	return cmd
}

// window resolves the report's window from an incident ID or --from/--to.
func (o *incidentReportOptions) window(ctx context.Context, s store.Auditor, args []string, now time.Time) (ledger.Window, ledger.Header, error) {
	all, err := o.f.incidents(ctx, s, now)
	if err != nil {
		return ledger.Window{}, ledger.Header{}, err
	}
	if len(args) == 0 {
		from, err := time.Parse(time.RFC3339, o.from)
		if err != nil {
			return ledger.Window{}, ledger.Header{}, fmt.Errorf("--from: want an RFC 3339 time (2026-01-02T15:04:05Z), got %q", o.from)
		}
		to := now
		if o.to != "" {
			if to, err = time.Parse(time.RFC3339, o.to); err != nil {
				return ledger.Window{}, ledger.Header{}, fmt.Errorf("--to: want an RFC 3339 time (2026-01-02T15:04:05Z), got %q", o.to)
			}
		}
		if to.Before(from) {
			return ledger.Window{}, ledger.Header{}, fmt.Errorf("--to %s is before --from %s", o.to, o.from)
		}
		return ledger.WindowBetween(from, to, all), ledger.Header{From: from, To: to}, nil
	}
	var found []ledger.Incident
	for _, in := range all {
		if strings.HasPrefix(in.ID, strings.ToLower(args[0])) {
			found = append(found, in)
		}
	}
	switch {
	case len(found) == 0:
		return ledger.Window{}, ledger.Header{}, fmt.Errorf("no incident %q in the audit since %s (idemctl incident list; --since to look further back)", args[0], o.f.since)
	case len(found) > 1:
		return ledger.Window{}, ledger.Header{}, fmt.Errorf("%q names %d incidents: give more of the ID", args[0], len(found))
	}
	in := found[0]
	w := ledger.WindowOf(in)
	return w, ledger.Header{Incident: &in, From: w.From, To: w.To, Shards: w.Shards}, nil
}

func (o *incidentReportOptions) run(cmd *cobra.Command, args []string) error {
	var errs []error
	switch o.format {
	case ledger.FormatTable, ledger.FormatJSON, ledger.FormatCSV:
	default:
		errs = append(errs, fmt.Errorf("--output: must be table, json or csv, got %q", o.format))
	}
	if (len(args) == 1) == (o.from != "") {
		errs = append(errs, errors.New("give an incident ID (idemctl incident list) or --from TIME, not both"))
	}
	if len(args) == 1 && o.to != "" {
		errs = append(errs, errors.New("--to goes with --from: an incident ID has its own window"))
	}
	if o.page < 1 || o.page > 5000 {
		errs = append(errs, fmt.Errorf("--page: must be within 1 and 5000, got %d", o.page))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	ctx := cmd.Context()
	s, err := o.f.sf.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	now := time.Now()
	w, h, err := o.window(ctx, s, args, now)
	if err != nil {
		return err
	}
	operator, reason := o.af.forRead()
	what := fmt.Sprintf("window=%s..%s", w.From.UTC().Format(time.RFC3339), w.To.UTC().Format(time.RFC3339))
	if h.Incident != nil {
		what = "incident=" + h.Incident.ID + " " + what
	}
	if err := s.Audit(ctx, operator, "ledger_report", reason, what); err != nil {
		return err
	}
	_, err = ledger.Report(ctx, s, w, h, ledger.Options{Format: o.format, Page: o.page, Summary: cmd.ErrOrStderr()}, cmd.OutOrStdout())
	return err
}
