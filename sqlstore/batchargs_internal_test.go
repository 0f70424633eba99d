package sqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// TestBatchArgumentsDoNotAllocatePerMember: building and encoding the
// arguments of a batched claim and of a batched finish, as pgx encodes
// them for the statements' own parameter types, costs the same number of
// allocations for 64 members as for 8 (one per array, none per element).
// Plain slices cost one or more per element: 163 for eight claims and 873
// for 64, 175 for eight finishes and 941 for 64 (23 each now).
func TestBatchArgumentsDoNotAllocatePerMember(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{Migrate: true, DSN: pgtest.NewDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	claims := func(n int) []*member[claimJob] {
		var batch []*member[claimJob]
		for i := range n {
			req := storetest.Request(t, fmt.Sprintf("tenant/a%d", i), fmt.Sprintf("key-%d", i), `{"amount":"1"}`)
			batch = append(batch, &member[claimJob]{key: memberKey{keyHash: req.Scope.Key.Hash()},
				req: claimJob{req: req, owner: "w/1", opID: newOperationID(false), state: idempotency.InProgress}})
		}
		return batch
	}
	finishes := func(n int) []*member[finishJob] {
		var batch []*member[finishJob]
		for i := range n {
			req := storetest.Request(t, fmt.Sprintf("tenant/a%d", i), fmt.Sprintf("key-%d", i), `{"amount":"1"}`)
			l := &store.Lease{Scope: req.Scope, KeyHash: req.Scope.Key.Hash(), Owner: "w/1", Version: 1, Token: req.Token}
			l.TTL = 24 * time.Hour
			u := s.prepareFinish(l, storetest.Completed(`{"id":"pay_1"}`))
			batch = append(batch, &member[finishJob]{req: finishJob{u: &u}})
		}
		return batch
	}
	for _, tc := range []struct {
		name string
		sql  string
		args func(n int) func() []any
	}{
		{"claim", claimBatchSQL, func(n int) func() []any {
			b := claims(n)
			return func() []any { return claimBatchArgs(b) }
		}},
		{"finish", finishBatchSQL, func(n int) func() []any {
			b := finishes(n)
			return func() []any { return finishBatchArgs(b) }
		}},
	} {
		sd, err := c.Conn().Prepare(ctx, "", tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		m := c.Conn().TypeMap()
		allocs := func(n int) float64 {
			build := tc.args(n)
			buf := make([]byte, 0, 1<<20)
			return testing.AllocsPerRun(20, func() {
				for i, a := range build() {
					if buf, err = m.Encode(sd.ParamOIDs[i+1], pgtype.BinaryFormatCode, a, buf[:0]); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
		a8, a64 := allocs(8), allocs(64)
		t.Logf("%s: %.0f allocations for 8 members, %.0f for 64", tc.name, a8, a64)
		if a64 != a8 {
			t.Errorf("%s: %.0f allocations for 8 members, %.0f for 64: the arguments allocate per member", tc.name, a8, a64)
		}
	}
}
