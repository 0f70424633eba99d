package ownership_test

import (
	"testing"

	"github.com/idemcoord/idemcoord/ownership"
)

// TestTheFenceBootstrapKeepsTheStoresRetryBudget: the fences' transaction,
// run at the end of the directory's bootstrap, rides out serialization
// failures (instances starting together race on shard_fences) within the
// store's own retry budget, as it did before the bootstrap retried etcd
// steps: the etcd retry loop around the bootstrap must not lend the store
// its much smaller budget (10 attempts in all, its own included).
func TestTheFenceBootstrapKeepsTheStoresRetryBudget(t *testing.T) {
	ctx := ctxT(t)
	s, _ := openStore(t)
	const conflicts = 15 // more than retry.Default.Etcd's attempts, fewer than the store's
	if _, err := s.Pool().Exec(ctx, `
		CREATE SEQUENCE injected_conflicts;
		CREATE FUNCTION conflict_a_while() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF nextval('injected_conflicts') <= 15 THEN
				RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001';
			END IF;
			RETURN NULL;
		END $$;
		CREATE TRIGGER conflict_a_while BEFORE INSERT ON shard_fences
		FOR EACH STATEMENT EXECUTE FUNCTION conflict_a_while();`); err != nil {
		t.Fatal(err)
	}
	d := ownership.NewDirectory(client(t, cluster(t).Endpoints()), s, ownership.WithPrefix(prefix(t)),
		ownership.WithLogger(quiet()))
	const shards = 16
	if err := d.Bootstrap(ctx, topology(t), shards); err != nil {
		t.Fatalf("bootstrap through %d serialization failures of the fences' transaction: %v", conflicts, err)
	}
	var n int64
	if err := s.Pool().QueryRow(ctx, `SELECT last_value FROM injected_conflicts`).Scan(&n); err != nil || n <= conflicts {
		t.Fatalf("the fences' transaction ran %d times (%v): the injected conflicts did not happen", n, err)
	}
	if entries := agree(t, d, s); len(entries) != shards {
		t.Fatalf("%d entries, want %d", len(entries), shards)
	}
}
