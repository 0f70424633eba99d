package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/sqlstore"
)

func opPurgeCmd() *cobra.Command {
	var sf connFlags
	var af auditFlags
	var actor, format string
	cmd := &cobra.Command{
		Use:   "purge --actor TENANT/SUBJECT --reason TEXT",
		Short: "Remove an actor's stored bodies and personal fields, keeping dedup markers (a repair, audited)",
		Long: `purge removes the stored response bodies, headers and error summaries of every
finished record of one actor scope, keeping the markers that stop a late retry
from running again. The scope is TENANT/SUBJECT, as in X-Idempotency-Actor
(the dev cluster's actor "demo" is demo/demo).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			if err := checkScope(actor); err != nil {
				return withKnownScopes(cmd.Context(), sf, actor, err)
			}
			if err := af.checkRepair(); err != nil {
				return err
			}
			s, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := s.Purge(cmd.Context(), af.operator, af.reason, actor)
			if err != nil {
				return err
			}
			v := map[string]any{"actor": actor, "purged": n, "operator": af.operator, "reason": af.reason}
			if format == outputJSON {
				return render(cmd.OutOrStdout(), format, table{v: v})
			}
			if n == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "actor %s: no records to purge (none finished and not yet purged under this scope)\n", actor)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "actor %s: purged %d records (audited: %s)\n", actor, n, af.operator)
			return nil
		},
	}
	sf.addStore(cmd)
	af.add(cmd, "why, e.g. a ticket (required; recorded in repair_audit)")
	cmd.Flags().StringVar(&actor, "actor", "", "actor scope TENANT/SUBJECT, e.g. demo/demo (required)")
	addOutputFlag(cmd, &format)
	cmd.MarkFlagRequired("actor")
	return cmd
}

// checkScope reports why actor is not an actor scope TENANT/SUBJECT.
func checkScope(actor string) error {
	tenant, subject, ok := strings.Cut(actor, "/")
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("it has no \"/\"")
	case tenant == "":
		err = fmt.Errorf("the tenant before \"/\" is empty")
	default:
		err = authn.Principal{Tenant: tenant, Subject: subject}.Validate()
	}
	if err != nil {
		return fmt.Errorf("--actor %q is not an actor scope TENANT/SUBJECT (%v)", actor, err)
	}
	return nil
}

// withKnownScopes adds to err, for an actor given as a bare subject, the
// scopes that hold records of that subject: what the operator meant.
func withKnownScopes(ctx context.Context, sf connFlags, actor string, err error) error {
	if strings.Contains(actor, "/") || actor == "" {
		return err
	}
	generic := fmt.Errorf("%w; a bare subject needs its tenant, e.g. --actor demo/%s for the dev cluster's tenant demo", err, actor)
	s, oerr := sf.open(ctx)
	if oerr != nil {
		return generic
	}
	defer s.Close()
	scopes, lerr := s.ActorScopes(ctx, actor, 5)
	switch {
	case lerr != nil:
		return generic
	case len(scopes) == 0:
		return fmt.Errorf("%w; no records have subject %q under any tenant", generic, actor)
	}
	return fmt.Errorf("%w; records of subject %q exist under --actor %s", err, actor, strings.Join(scopes, ", --actor "))
}

// maxCleanupBatch is the largest --batch: the configuration's
// cleanup.batch_size bound, for the same reason (one delete statement's
// transaction stays small).
const maxCleanupBatch = 10000

func opCleanupCmd() *cobra.Command {
	var sf connFlags
	var af auditFlags
	var batch int
	var format string
	cmd := &cobra.Command{
		Use:   "cleanup --reason TEXT",
		Short: "Delete expired finished records in bounded batches until none is left (a repair, audited)",
		Long: `cleanup deletes expired records in resting states (COMPLETED, TERMINAL_FAILURE,
CANCELLED, RETRYABLE_FAILURE) in batches of --batch rows; each batch and its repair_audit
row (operator, reason, number deleted) commit in one transaction. Records that
are in progress or whose outcome is unknown are never deleted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			if err := af.checkRepair(); err != nil {
				return err
			}
			if batch < 1 || batch > maxCleanupBatch {
				return fmt.Errorf("--batch: must be within 1 and %d rows, got %d", maxCleanupBatch, batch)
			}
			s, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			total, batches := 0, 0
			for cmd.Context().Err() == nil {
				n, err := s.AuditedCleanup(cmd.Context(), af.operator, af.reason, batch)
				if err != nil {
					return fmt.Errorf("after deleting %d records: %w", total, err)
				}
				total += n
				batches++
				if n < batch {
					break
				}
			}
			if err := cmd.Context().Err(); err != nil {
				return fmt.Errorf("stopped after deleting %d records: %w", total, err)
			}
			if format == outputJSON {
				return render(cmd.OutOrStdout(), format, table{v: map[string]any{"deleted": total, "batches": batches,
					"operator": af.operator, "reason": af.reason}})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deleted %s in %s (audited: %s)\n",
				count(total, "expired record", "expired records"), count(batches, "batch", "batches"), af.operator)
			return nil
		},
	}
	sf.addStore(cmd)
	af.add(cmd, "why, e.g. a ticket or \"nightly\" (required; recorded in repair_audit)")
	cmd.Flags().IntVar(&batch, "batch", sqlstore.DefaultCleanupBatch, "rows per delete transaction (1 to 10000)")
	addOutputFlag(cmd, &format)
	return cmd
}
