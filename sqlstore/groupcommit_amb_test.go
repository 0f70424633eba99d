package sqlstore_test

import (
	"context"
	"testing"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/store"
)

// proxiedGroupCommit is a batching store through a toxiproxy, and a
// direct store on the same database.
func proxiedGroupCommit(t *testing.T) (gcStore, *pgProxy) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	p := newPGProxy(t, dsn)
	return openGroupCommit(t, p.dsn, dsn, newClock(), nil), p
}

// isBatch matches the batch statements: only they unnest arrays.
var isBatch = statement("unnest(")

// TestAnAmbiguousBatchClaimIsSettledByEachMemberWithoutAClaimTwice: the
// connection of a batch of claims is cut after the statement was sent,
// its answer lost (it committed) or the statement lost (it did not).
// Every member settles its own claim: a first run whose record is its
// own insert (recognised by lease_owner), one record per key, none
// claimed twice.
func TestAnAmbiguousBatchClaimIsSettledByEachMemberWithoutAClaimTwice(t *testing.T) {
	for _, tt := range lossModes {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			g, p := proxiedGroupCommit(t)
			w, _ := p.cut(t, "batch-claim", tt.mode, true, isBatch)
			holder := "tenant/holder"
			var reqs []store.ClaimRequest
			for _, a := range actorsOff(holder, 6) {
				reqs = append(reqs, request(t, a, "key", `{}`))
			}
			cs, errs := batchClaims(t, g, holder, reqs)
			if !w.Fired() {
				t.Fatal("the tripwire never cut a batch")
			}
			for i, r := range reqs {
				if errs[i] != nil || cs[i].Outcome != store.FirstRun {
					t.Errorf("claim %d: %v %v, want first_run (logs %q)", i, cs[i].Outcome, errs[i], g.logs.find(""))
					continue
				}
				rec, err := g.direct.Read(ctx, r.Scope)
				if err != nil || rec.Version != 1 || rec.Attempts != 1 || rec.LeaseOwner != cs[i].Lease.Owner ||
					rec.OperationID != cs[i].Record.OperationID {
					t.Errorf("claim %d: stored v%d attempts %d owner %q op %v (%v), want the claim's own insert, once",
						i, rec.Version, rec.Attempts, rec.LeaseOwner, rec.OperationID, err)
				}
			}
			if n := count(t, g.direct, `SELECT count(*) FROM idempotency_records`); n != len(reqs)+1 {
				t.Errorf("%d records, want %d", n, len(reqs)+1)
			}
			if tt.mode == loseAnswer && len(g.logs.find("claim outcome ambiguous")) < len(reqs) {
				t.Errorf("ambiguity logs %q: every member must have settled its own claim", g.logs.find(""))
			}
		})
	}
}

// TestAnAmbiguousBatchFinishIsSettledByEachMemberAsApplied: the
// connection of a batch of finishes is cut after the statement was sent.
// Each member settles as a single finish with an unknown outcome does: it
// re-reads, and its finish is applied (version+1, its owner) once,
// reported as recorded, never as lost.
func TestAnAmbiguousBatchFinishIsSettledByEachMemberAsApplied(t *testing.T) {
	for _, tt := range lossModes {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			g, p := proxiedGroupCommit(t)
			holder := "tenant/holder"
			reqs, leases := claimEach(t, g, actorsOff(holder, 5))
			owners := make([]string, len(leases))
			for i, l := range leases {
				owners[i] = l.Owner
			}
			w, _ := p.cut(t, "batch-finish", tt.mode, true, isBatch)
			errs := batchFinishes(t, g, holder, leases)
			if !w.Fired() {
				t.Fatal("the tripwire never cut a batch")
			}
			for i, r := range reqs {
				if errs[i] != nil {
					t.Errorf("finish %d: %v, want nil (logs %q)", i, errs[i], g.logs.find(""))
				}
				rec, err := g.direct.Read(ctx, r.Scope)
				if err != nil || rec.State != idempotency.Completed || rec.Version != 2 || rec.LeaseOwner != owners[i] {
					t.Errorf("finish %d: stored %s v%d owner %q (%v), want our finish applied once", i, rec.State, rec.Version, rec.LeaseOwner, err)
				}
				if leases[i].Version != 2 {
					t.Errorf("finish %d: lease at v%d after the finish, want 2", i, leases[i].Version)
				}
			}
			if tt.mode == loseAnswer && len(g.logs.find("update outcome ambiguous")) < len(reqs) {
				t.Errorf("ambiguity logs %q: every member must have settled its own finish", g.logs.find(""))
			}
		})
	}
}

// TestABatchAnsweredCompletionUnknownIsAmbiguousLikeASingleStatement: a
// batch of claims or finishes that committed, answered with CockroachDB's
// 40003 (statement_completion_unknown), is ambiguous for every member, as
// it is on the single-statement path (stmtOutcome): each member settles
// its own write as applied, a claim as its own first run and a finish as
// recorded, never as lost ownership or a second claim.
func TestABatchAnsweredCompletionUnknownIsAmbiguousLikeASingleStatement(t *testing.T) {
	holder := "tenant/holder"
	t.Run("claims", func(t *testing.T) {
		ctx := context.Background()
		g, p := proxiedGroupCommit(t)
		w, _ := p.cut(t, "batch-claim", answerUnknown, true, isBatch)
		var reqs []store.ClaimRequest
		for _, a := range actorsOff(holder, 6) {
			reqs = append(reqs, request(t, a, "key", `{}`))
		}
		cs, errs := batchClaims(t, g, holder, reqs)
		if !w.Fired() {
			t.Fatal("the tripwire never answered a batch 40003")
		}
		for i, r := range reqs {
			if errs[i] != nil || cs[i].Outcome != store.FirstRun {
				t.Errorf("claim %d: %v %v, want first_run", i, cs[i].Outcome, errs[i])
				continue
			}
			rec, err := g.direct.Read(ctx, r.Scope)
			if err != nil || rec.Version != 1 || rec.LeaseOwner != cs[i].Lease.Owner {
				t.Errorf("claim %d: stored v%d owner %q (%v), want the claim's own insert, once", i, rec.Version, rec.LeaseOwner, err)
			}
		}
		if n := len(g.logs.find("claim outcome ambiguous")); n < len(reqs) {
			t.Errorf("%d members settled an ambiguous claim, want all %d (logs %q)", n, len(reqs), g.logs.find(""))
		}
	})
	t.Run("finishes", func(t *testing.T) {
		ctx := context.Background()
		g, p := proxiedGroupCommit(t)
		reqs, leases := claimEach(t, g, actorsOff(holder, 5))
		owners := make([]string, len(leases))
		for i, l := range leases {
			owners[i] = l.Owner
		}
		w, _ := p.cut(t, "batch-finish", answerUnknown, true, isBatch)
		errs := batchFinishes(t, g, holder, leases)
		if !w.Fired() {
			t.Fatal("the tripwire never answered a batch 40003")
		}
		for i, r := range reqs {
			if errs[i] != nil || leases[i].Version != 2 {
				t.Errorf("finish %d: %v, lease v%d, want recorded at v2 (logs %q)", i, errs[i], leases[i].Version, g.logs.find(""))
			}
			rec, err := g.direct.Read(ctx, r.Scope)
			if err != nil || rec.State != idempotency.Completed || rec.Version != 2 || rec.LeaseOwner != owners[i] {
				t.Errorf("finish %d: stored %s v%d owner %q (%v), want our finish applied once", i, rec.State, rec.Version, rec.LeaseOwner, err)
			}
		}
	})
}
