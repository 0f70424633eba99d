package validate

import (
	"fmt"
	"slices"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// MoveAction is the repair_audit action of a fence move.
const MoveAction = "move_fence"

// Move is one audited fence move: shard from epoch From to From+1, owned
// by To from then on.
type Move struct {
	// Shard moved from epoch From to From+1, owned by To from then on; At
	// is the audit row's database time.
	Shard int
	From  int64
	To    string
	At    time.Time
}

// ParseMoveAudit reads a move from an audit row whose action is
// MoveAction and whose detail is fencing.Move's String form
// (`shard=3 epoch 1->2 to="eu-west"`).
func ParseMoveAudit(a Audit) (Move, bool) {
	if a.Action != MoveAction {
		return Move{}, false
	}
	var m Move
	var to int64
	if _, err := fmt.Sscanf(a.Detail, "shard=%d epoch %d->%d to=%q", &m.Shard, &m.From, &to, &m.To); err != nil || to != m.From+1 {
		return Move{}, false
	}
	m.At = a.At
	return m, true
}

func movesByShard(audit []Audit, parse func(Audit) (Move, bool)) map[int][]Move {
	out := map[int][]Move{}
	for _, a := range audit {
		if m, ok := parse(a); ok {
			out[m.Shard] = append(out[m.Shard], m)
		}
	}
	for _, ms := range out {
		slices.SortStableFunc(ms, func(a, b Move) int { return a.At.Compare(b.At) })
	}
	return out
}

// retiredAt returns when epoch e of shard was retired (the move from e),
// if it was.
func (ix *index) retiredAt(shard int, e int64) (time.Time, bool) {
	for _, m := range ix.moves[shard] {
		if m.From == e {
			return m.At, true
		}
	}
	return time.Time{}, false
}

// checkEpochs is I3: no record carries an epoch its shard never reached,
// none was created under an epoch already retired, and no probe's stale
// write was accepted.
func (ix *index) checkEpochs(checked map[Invariant]int) []Violation {
	var out []Violation
	for _, r := range ix.st.Records {
		checked[I3]++
		f, ok := ix.fences[r.Shard]
		switch {
		case ok && r.Epoch > f.Epoch:
			out = append(out, Violation{Invariant: I3, Shard: r.Shard,
				Message: fmt.Sprintf("record of operation %s carries epoch %d, above the fence's %d", r.OperationID, r.Epoch, f.Epoch)})
		case ok && r.Epoch < f.Epoch:
			if at, retired := ix.retiredAt(r.Shard, r.Epoch); retired && r.CreatedAt.After(at.Add(ix.opts.Slack)) {
				out = append(out, Violation{Invariant: I3, Shard: r.Shard,
					Message: fmt.Sprintf("operation %s was claimed under epoch %d %v after it was retired", r.OperationID, r.Epoch, r.CreatedAt.Sub(at))})
			}
		}
	}
	for _, p := range ix.h.Filter(history.KindProbe) {
		if p.Probe == history.ProbeStaleEpochAccepted {
			out = append(out, Violation{Invariant: I3, Shard: p.Shard, Message: "a probe's write with an old epoch committed",
				Excerpt: []history.Operation{p}})
		}
	}
	return out
}

// checkMoves is I4: per shard the audited moves form one chain of growing
// epochs with one owner each, the fence ends where the chain does, and the
// directory (when given) agrees with the fence.
func (ix *index) checkMoves(checked map[Invariant]int) []Violation {
	var out []Violation
	bad := func(shard int, format string, args ...any) {
		out = append(out, Violation{Invariant: I4, Shard: shard, Message: fmt.Sprintf(format, args...)})
	}
	for _, f := range ix.st.Fences {
		checked[I4]++
		ms := ix.moves[f.Shard]
		for i := 1; i < len(ms); i++ {
			if ms[i].From <= ms[i-1].From {
				bad(f.Shard, "epoch %d moved again after epoch %d (to %q and %q): epochs must grow, one owner each",
					ms[i].From, ms[i-1].From, ms[i-1].To, ms[i].To)
			}
		}
		if n := len(ms); n > 0 {
			last := ms[n-1]
			switch {
			case f.Epoch < last.Epoch():
				bad(f.Shard, "fence at epoch %d, below the audited move to %d: the epoch went back", f.Epoch, last.Epoch())
			case f.Epoch == last.Epoch() && f.OwnerRegion != last.To:
				bad(f.Shard, "fence owner %q at epoch %d, the audited move gave it to %q", f.OwnerRegion, f.Epoch, last.To)
			case f.Epoch > last.Epoch():
				bad(f.Shard, "fence at epoch %d, past the last audited move to %d: an unaudited move", f.Epoch, last.Epoch())
			}
		}
		if ix.opts.Directory != nil {
			d, ok := ix.opts.Directory[f.Shard]
			switch {
			case !ok:
				bad(f.Shard, "etcd has no entry for the shard")
			case d.Epoch != f.Epoch || d.Owner != f.OwnerRegion:
				bad(f.Shard, "etcd says epoch %d owner %q, SQL says epoch %d owner %q", d.Epoch, d.Owner, f.Epoch, f.OwnerRegion)
			case d.State == "FENCING":
				bad(f.Shard, "etcd still has the shard FENCING after healing")
			}
		}
	}
	return out
}

// Epoch returns the epoch the move installed.
func (m Move) Epoch() int64 { return m.From + 1 }

// checkOverlap is I6: two first-run successes of one shard served by
// different regions never overlap in time unless the shard moved in
// between; and, when the initial owners are known, a region serves a
// first run only while it owned the shard.
func (ix *index) checkOverlap(checked map[Invariant]int) []Violation {
	byShard := map[int][]history.Operation{}
	for _, op := range ix.h.Ops {
		if op.Acknowledged() && !op.Replayed && op.ServedBy != "" && op.Shard >= 0 {
			byShard[op.Shard] = append(byShard[op.Shard], op)
		}
	}
	slack := int64(ix.opts.Slack)
	var out []Violation
	for shard, ops := range byShard {
		checked[I6]++
		moved := func(from, to int64) bool {
			for _, m := range ix.moves[shard] {
				if at := ix.h.At(m.At); at >= from-slack && at <= to+slack {
					return true
				}
			}
			return false
		}
	pairs:
		for i, a := range ops {
			for _, b := range ops[i+1:] {
				if b.Call > a.Return {
					break // sorted by call: no later op overlaps a
				}
				if b.ServedBy != a.ServedBy && !moved(min(a.Call, b.Call), max(a.Return, b.Return)) {
					out = append(out, Violation{Invariant: I6, Shard: shard, Excerpt: []history.Operation{a, b},
						Message: fmt.Sprintf("%s and %s both accepted writes for the shard at once, with no move between", a.ServedBy, b.ServedBy)})
					break pairs
				}
			}
		}
		if ix.opts.InitialOwner != nil {
			for _, op := range ops {
				if !ix.ownedDuring(shard, op.ServedBy, op.Call-slack, op.Return+slack) {
					out = append(out, Violation{Invariant: I6, Shard: shard, Excerpt: []history.Operation{op},
						Message: fmt.Sprintf("%s accepted a write while it did not own the shard", op.ServedBy)})
					break
				}
			}
		}
	}
	return out
}

// ownedDuring reports whether region owned shard at some time in [from, to].
func (ix *index) ownedDuring(shard int, region string, from, to int64) bool {
	owner, since := ix.opts.InitialOwner(shard), int64(math64Min)
	for _, m := range ix.moves[shard] {
		at := ix.h.At(m.At)
		if owner == region && since <= to && at >= from {
			return true
		}
		owner, since = m.To, at
	}
	return owner == region && since <= to
}

const math64Min = -1 << 63

// fmtMove spells a move the way ParseMoveAudit reads it.
func fmtMove(m Move) string {
	return fmt.Sprintf("shard=%d epoch %d->%d to=%q", m.Shard, m.From, m.From+1, m.To)
}
