package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

func opFindCmd() *cobra.Command {
	var sf connFlags
	var af auditFlags
	var actor, endpoint, key, format string
	cmd := &cobra.Command{
		Use:   "find --actor TENANT/SUBJECT --endpoint NAME --key KEY",
		Short: "Show the record of an Idempotency-Key (a read: no reason needed; the access is logged)",
		Long: `find reads the record of one key, as a support ticket quotes it: the actor
scope (X-Idempotency-Actor), the endpoint's name in the configuration, and the
Idempotency-Key as the client sent it (a bare token or an sf-string "..."). The
store keeps only the key's SHA-256; find hashes KEY the same way.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			if err := checkScope(actor); err != nil {
				return err
			}
			k, err := idempotency.ParseKeyHeader(key)
			if err != nil {
				return fmt.Errorf("--key: %w", err)
			}
			s, err := sf.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			operator, reason := af.forRead()
			rec, err := s.AdminFind(cmd.Context(), operator, reason, store.Scope{Actor: actor, Endpoint: endpoint, Key: k})
			if errors.Is(err, store.ErrNotFound) {
				if names := sf.endpointNames(); len(names) > 0 && !slices.Contains(names, endpoint) {
					return fmt.Errorf("no record: --endpoint %q is not an endpoint of the configuration (%s): %w",
						endpoint, strings.Join(names, ", "), err)
				}
				return fmt.Errorf("no record for that key of actor %s on endpoint %s (expired and cleaned up, another endpoint or actor, or never sent): %w", actor, endpoint, err)
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
	cmd.Flags().StringVar(&actor, "actor", "", "actor scope TENANT/SUBJECT (required)")
	cmd.Flags().StringVar(&endpoint, "endpoint", "", "endpoint name from the configuration, e.g. create-payment (required)")
	cmd.Flags().StringVar(&key, "key", "", "the Idempotency-Key as sent (required)")
	for _, f := range []string{"actor", "endpoint", "key"} {
		cmd.MarkFlagRequired(f)
	}
	return cmd
}

// tierOf names the retention tier a record is in: "full" while it keeps
// its whole answer for replays, "marker" once cleanup compacted it to a
// dedup marker after the endpoint's replay_ttl (retries get 410
// replay-expired; the key is still honoured until expires_at).
func tierOf(rec store.Record) string {
	if rec.Compacted {
		return "marker"
	}
	return "full"
}

// recordTable is an operation as op get and op find print it: one field a
// row for people, an object for scripts. Bodies are never printed.
func recordTable(rec store.Record) table {
	fields := []struct {
		name string
		v    any
	}{
		{"operation_id", rec.OperationID}, {"actor", rec.Scope.Actor}, {"endpoint", rec.Scope.Endpoint},
		{"state", rec.State}, {"version", rec.Version}, {"attempts", rec.Attempts}, {"last_stage", rec.LastStage},
		{"shard", rec.Token.Shard}, {"epoch", rec.Token.Epoch}, {"status", rec.Snapshot.Status},
		{"resource_id", rec.Snapshot.ResourceID}, {"tier", tierOf(rec)},
		{"error", rec.ErrorSummary}, {"purged", rec.Purged},
		{"created_at", rec.CreatedAt}, {"updated_at", rec.UpdatedAt}, {"expires_at", rec.ExpiresAt},
	}
	t := table{header: []string{"FIELD", "VALUE"}}
	obj := map[string]any{}
	for _, f := range fields {
		obj[f.name] = f.v
		var s string
		switch v := f.v.(type) {
		case time.Time:
			s = v.UTC().Format(time.RFC3339)
		case int:
			s = strconv.Itoa(v)
		default:
			s = fmt.Sprint(v)
		}
		t.rows = append(t.rows, []string{f.name, s})
	}
	t.v = obj
	return t
}
