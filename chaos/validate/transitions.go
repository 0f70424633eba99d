package validate

import (
	"fmt"
	"slices"
)

// bootstrapEpoch is the epoch every shard starts at, in etcd and in SQL.
const bootstrapEpoch = 1

// States of the etcd directory, as ownership names them.
const (
	stateFencing = "FENCING"
)

// checkTransitions is I8 in its observable form (see the package doc):
// every ownership change that took effect was a compare-and-swap on the
// state it replaced, in SQL and in etcd, and the two stores agree on
// every transfer.
func (ix *index) checkTransitions(checked map[Invariant]int) []Violation {
	var out []Violation
	for _, f := range ix.st.Fences {
		checked[I8]++
		bad := func(format string, args ...any) {
			out = append(out, Violation{Invariant: I8, Shard: f.Shard, Message: fmt.Sprintf(format, args...)})
		}
		moves := slices.Clone(ix.moves[f.Shard])
		slices.SortStableFunc(moves, func(a, b Move) int { return int(a.From - b.From) })
		if msg := sqlChain(f, moves); msg != "" {
			bad("%s", msg)
		}
		if ix.opts.DirectoryHistory == nil {
			continue
		}
		h, ok := ix.opts.DirectoryHistory[f.Shard]
		if !ok || len(h.Revisions) == 0 {
			bad("etcd holds no revision of the shard")
			continue
		}
		if msg := etcdChain(h); msg != "" {
			bad("%s", msg)
		}
		for _, msg := range matchStores(h, moves) {
			bad("%s", msg)
		}
	}
	return out
}

// sqlChain checks that moves, sorted by epoch, step from the bootstrap
// epoch one at a time to the fence's epoch. It returns the first problem.
func sqlChain(f Fence, moves []Move) string {
	for i, m := range moves {
		want := int64(bootstrapEpoch + i)
		switch {
		case m.From < want:
			return fmt.Sprintf("epoch %d was moved from twice (to %q and %q): two moves decided on one state",
				m.From, moves[i-1].To, m.To)
		case m.From > want:
			return fmt.Sprintf("a move from epoch %d, but no audited move installed it (the chain stops at %d): "+
				"a move decided on a state the fence never held", m.From, want)
		}
	}
	if want := int64(bootstrapEpoch + len(moves)); f.Epoch != want {
		return fmt.Sprintf("fence at epoch %d after %d audited moves (want %d): an ownership change outside the audited compare-and-swap",
			f.Epoch, len(moves), want)
	}
	return ""
}

// etcdChain checks each revision against the one it replaced. It returns
// the first problem.
func etcdChain(h ShardHistory) string {
	revs := h.Revisions
	if first := revs[0]; h.Complete && (first.Epoch != bootstrapEpoch || first.State == stateFencing) {
		return fmt.Sprintf("etcd revision %d created the shard at epoch %d %s, not the bootstrap's epoch %d",
			first.Revision, first.Epoch, first.State, bootstrapEpoch)
	}
	for i := 1; i < len(revs); i++ {
		prev, cur := revs[i-1], revs[i]
		switch {
		case cur.Revision <= prev.Revision:
			return fmt.Sprintf("etcd revisions out of order (%d after %d)", cur.Revision, prev.Revision)
		case cur.State == stateFencing && prev.State == stateFencing:
			return fmt.Sprintf("etcd revision %d: a transfer to epoch %d owner %q replaced the transfer to epoch %d still in flight: "+
				"a transfer in flight is finished, never overwritten", cur.Revision, cur.Epoch, cur.Owner, prev.Epoch)
		case cur.State == stateFencing && cur.Epoch != prev.Epoch+1:
			return fmt.Sprintf("etcd revision %d: a transfer to epoch %d replaced epoch %d: epochs move one at a time",
				cur.Revision, cur.Epoch, prev.Epoch)
		case cur.State == stateFencing:
			if cur.FromEpoch != prev.Epoch || cur.FromOwner != prev.Owner || cur.FromState != prev.State {
				return fmt.Sprintf("etcd revision %d: a transfer to epoch %d owner %q says it replaced %q at epoch %d %s, "+
					"but it replaced %q at epoch %d %s: not a compare-and-swap on the state it replaced",
					cur.Revision, cur.Epoch, cur.Owner, cur.FromOwner, cur.FromEpoch, cur.FromState,
					prev.Owner, prev.Epoch, prev.State)
			}
		default:
			if prev.State != stateFencing || cur.Epoch != prev.Epoch || cur.Owner != prev.Owner || cur.State != prev.Final {
				return fmt.Sprintf("etcd revision %d: %q at epoch %d %s replaced %q at epoch %d %s: "+
					"ownership changed without the fenced transfer it must end", cur.Revision, cur.Owner, cur.Epoch,
					cur.State, prev.Owner, prev.Epoch, prev.State)
			}
		}
	}
	return ""
}

// matchStores pairs etcd's transfers with the audited SQL moves: one
// each, same epoch, same owner.
func matchStores(h ShardHistory, moves []Move) []string {
	type transfer struct {
		epoch int64
		owner string
	}
	inEtcd, inSQL := map[transfer]int{}, map[transfer]int{}
	revs := h.Revisions
	for i, r := range revs {
		if r.State == stateFencing && i < len(revs)-1 {
			inEtcd[transfer{r.Epoch, r.Owner}]++
		}
	}
	// etcd holds nothing older than its first revision: SQL moves to older
	// epochs cannot be matched.
	oldest := revs[0].Epoch
	if revs[0].State == stateFencing || h.Complete {
		oldest-- // the first revision's own transfer, or none, is visible
	}
	inFlight := transfer{}
	if last := revs[len(revs)-1]; last.State == stateFencing {
		inFlight = transfer{last.Epoch, last.Owner}
	}
	for _, m := range moves {
		if t := (transfer{m.Epoch(), m.To}); m.Epoch() > oldest && t != inFlight {
			inSQL[t]++
		}
	}
	var out []string
	for t, n := range inSQL {
		if inEtcd[t] != n {
			out = append(out, fmt.Sprintf("%d audited SQL moves to epoch %d owner %q, %d etcd transfers: "+
				"a fence moved without its etcd compare-and-swap", n, t.epoch, t.owner, inEtcd[t]))
		}
	}
	for t, n := range inEtcd {
		if inSQL[t] == 0 {
			out = append(out, fmt.Sprintf("%d etcd transfers to epoch %d owner %q finished with no audited SQL move: "+
				"ownership changed without moving the fence", n, t.epoch, t.owner))
		}
	}
	slices.Sort(out)
	return out
}
