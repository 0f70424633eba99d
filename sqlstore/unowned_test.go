package sqlstore_test

import (
	"testing"
)

// TestClaimNeedsNoPLpgSQL: the claim is one portable statement, so the
// store leaves no PL/pgSQL function behind (CockroachDB could not run
// idem_claim: no FOUND, no set-returning RETURN QUERY before v25.2).
func TestClaimNeedsNoPLpgSQL(t *testing.T) {
	s, _ := openStore(t, nil)
	if got := count(t, s, `SELECT count(*) FROM pg_proc WHERE proname = 'idem_claim'`); got != 0 {
		t.Fatalf("idem_claim functions = %d, want 0", got)
	}
}
