package sqlstore

import "testing"

// TestOperationIDsAreRandomOnCockroachDBAndTimeOrderedElsewhere: a
// time-ordered id would make the last range of CockroachDB's unsharded
// operation-id index take every insert; PostgreSQL's B-tree gains from it.
func TestOperationIDsAreRandomOnCockroachDBAndTimeOrderedElsewhere(t *testing.T) {
	for _, c := range []struct {
		cockroach bool
		version   int
	}{{true, 4}, {false, 7}} {
		if v := newOperationID(c.cockroach).Version(); int(v) != c.version {
			t.Errorf("cockroach=%v: operation id version %d, want %d", c.cockroach, v, c.version)
		}
	}
}
