package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/internal/buildinfo"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

func migrateCmd() *cobra.Command {
	var sf connFlags
	var format string
	cmd := &cobra.Command{
		Use:   "migrate [--dsn URL]",
		Short: "Apply the store's schema migrations (the only command that changes the schema)",
		Long: `migrate applies the portable migrations (sqlstore/migrations/portable); it is
idempotent. No other idemctl command, and idemd only with run --migrate,
changes the schema: a store without it makes them fail with "run idemctl
migrate". The CockroachDB multi-region layout is separate
(deploy/cockroach/README.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			// Open without migrating first: whether the schema was
			// already there is what the operator wants to know.
			s, err := sf.openWith(cmd.Context(), storeOpts{maxConns: 2})
			applied := errors.Is(err, sqlstore.ErrSchemaMissing)
			switch {
			case applied:
				if s, err = sf.openWith(cmd.Context(), storeOpts{maxConns: 2, migrate: true}); err != nil {
					return err
				}
			case err != nil:
				return err
			}
			defer s.Close()
			state := "already up to date: nothing applied"
			if applied {
				state = "migrations applied: the schema is up to date"
			}
			return render(cmd.OutOrStdout(), format, table{header: []string{"SCHEMA"}, rows: [][]string{{state}},
				v: map[string]any{"migrated": true, "applied": applied, "cockroach": cockroach(s)}})
		},
	}
	sf.addStore(cmd)
	addOutputFlag(cmd, &format)
	return cmd
}

func versionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the commit this binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			bi := buildinfo.Read()
			return render(cmd.OutOrStdout(), format, table{header: []string{"BINARY", "VERSION"},
				rows: [][]string{{"idemctl", bi.String()}}, v: bi})
		},
	}
	addOutputFlag(cmd, &format)
	return cmd
}

// cockroach reports whether s is the SQL store on CockroachDB (the
// migrate command's JSON says so); any other backend is not.
func cockroach(s store.Backend) bool {
	c, ok := s.(interface{ Cockroach() bool })
	return ok && c.Cockroach()
}
