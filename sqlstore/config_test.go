package sqlstore_test

import (
	"strings"
	"testing"

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
