package sqlstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// TestSQLStoreDefaultConfigNamesTheMissingDSN: DefaultConfig carries the
// documented defaults and validates once DSN is set; without it Validate
// names the field.
func TestSQLStoreDefaultConfigNamesTheMissingDSN(t *testing.T) {
	cfg := sqlstore.DefaultConfig()
	if cfg.MaxConns != sqlstore.DefaultMaxConns || cfg.MaxAttempts != sqlstore.DefaultMaxAttempts ||
		cfg.RetryBase != sqlstore.DefaultRetryBase || cfg.BackoffClock == nil || cfg.Logger == nil {
		t.Fatalf("DefaultConfig left a default out: %+v", cfg)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "dsn") {
		t.Errorf("Validate without a DSN = %v, want an error naming dsn", err)
	}
	cfg.DSN = "postgres://localhost/idemcoord"
	if err := cfg.Validate(); err != nil {
		t.Errorf("DefaultConfig with a DSN: %v", err)
	}
}

// TestAStoreOpenedFromAZeroConfigRunsWithGroupCommit: a Config that sets
// only DSN and Migrate, as the package's examples and the middleware
// example open their stores, gets the production defaults, group commit
// (DefaultGroupCommit) included; GroupCommitOff turns it off.
func TestAStoreOpenedFromAZeroConfigRunsWithGroupCommit(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	for _, tc := range []struct {
		name string
		gc   sqlstore.GroupCommit
		want sqlstore.GroupCommit
	}{
		{"zero", sqlstore.GroupCommit{}, sqlstore.DefaultGroupCommit},
		{"off", sqlstore.GroupCommitOff, sqlstore.GroupCommitOff},
	} {
		s, err := sqlstore.Open(context.Background(), sqlstore.Config{Migrate: true, DSN: dsn, GroupCommit: tc.gc})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.GroupCommit(); got != tc.want {
			t.Errorf("%s: the store runs with group commit %+v, want %+v", tc.name, got, tc.want)
		}
		s.Close()
	}
}
