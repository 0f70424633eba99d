package backend_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store/backend"

	_ "github.com/idemcoord/idemcoord/patronistore"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestABackendIsOnePackageAndItsRegistration: linking a backend's
// package registers it; Open picks it by store.backend, postgres when
// unset, and refuses an unknown name naming the field and the choices.
func TestABackendIsOnePackageAndItsRegistration(t *testing.T) {
	if got := backend.Names(); !slices.Contains(got, "postgres") || !slices.Contains(got, "patroni") {
		t.Fatalf("Names() = %v, want postgres and patroni", got)
	}
	_, err := backend.Open(context.Background(), backend.Options{Store: config.Store{Backend: "spanner", DSN: "x"}})
	if err == nil || !strings.Contains(err.Error(), "store.backend") || !strings.Contains(err.Error(), "patroni, postgres") {
		t.Fatalf("Open(spanner) = %v, want an error naming store.backend and the registered backends", err)
	}
	s, err := backend.Open(context.Background(), backend.Options{Store: config.Store{DSN: pgtest.NewDatabase(t)}, Migrate: true, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*sqlstore.Store); !ok {
		t.Errorf("the default backend opened %T, want *sqlstore.Store", s)
	}
}
