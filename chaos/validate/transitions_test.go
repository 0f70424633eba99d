package validate

import (
	"testing"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// Etcd revisions of the fixture's shard, as the ownership package writes
// them: the bootstrap entry, a transfer (FENCING at the next epoch, naming
// what it replaced) and its end.
func active(rev, epoch int64, owner string) DirectoryRevision {
	return DirectoryRevision{DirectoryEntry: DirectoryEntry{Owner: owner, Epoch: epoch, State: "ACTIVE"}, Revision: rev}
}

func failedOver(rev, epoch int64, owner string) DirectoryRevision {
	r := active(rev, epoch, owner)
	r.State = "FAILED_OVER"
	return r
}

func fencingFrom(rev int64, owner string, from DirectoryRevision, final string) DirectoryRevision {
	return DirectoryRevision{DirectoryEntry: DirectoryEntry{Owner: owner, Epoch: from.Epoch + 1, State: "FENCING"},
		Revision: rev, FromOwner: from.Owner, FromEpoch: from.Epoch, FromState: from.State, Final: final}
}

// failoverHistory is shard 3 bootstrapped to us-east, failed over to
// eu-west at epoch 2, then moved to ap-south at epoch 3: its etcd
// revisions and its SQL state.
func failoverHistory() (ShardHistory, []Audit, Fence) {
	boot := active(10, 1, "us-east")
	fo := failedOver(21, 2, "eu-west")
	revs := []DirectoryRevision{boot, fencingFrom(20, "eu-west", boot, "FAILED_OVER"), fo,
		fencingFrom(30, "ap-south", fo, "ACTIVE"), active(31, 3, "ap-south")}
	audit := []Audit{move(1, "eu-west", 5000), move(2, "ap-south", 6000)}
	return ShardHistory{Revisions: revs, Complete: true}, audit, Fence{Shard: fxShard, Epoch: 3, OwnerRegion: "ap-south"}
}

// An ownership change that was not a compare-and-swap on the state it
// replaced (what a mover acting on a watch event alone leaves behind) is
// flagged as I8; the same stores with every change a compare-and-swap
// pass.
func TestCheckFlagsOwnershipChangesThatWereNoCompareAndSwap(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(sh *ShardHistory, st *State)
		etcd   bool // pass the etcd history to the checker
		want   bool // an I8 violation
	}{
		{"clean: a failover and a move, both stores agree", func(sh *ShardHistory, st *State) {}, true, false},
		{"clean: SQL only", func(sh *ShardHistory, st *State) {}, false, false},
		{"clean: a transfer still in flight at the end", func(sh *ShardHistory, st *State) {
			sh.Revisions = append(sh.Revisions, fencingFrom(40, "us-east", sh.Revisions[4], "ACTIVE"))
		}, true, false},
		{"clean: etcd compacted the older revisions", func(sh *ShardHistory, st *State) {
			sh.Revisions, sh.Complete = sh.Revisions[2:], false
		}, true, false},

		{"a gap in the SQL fence chain", func(sh *ShardHistory, st *State) {
			st.Audit = []Audit{move(1, "eu-west", 5000), move(3, "ap-south", 6000)}
			st.Fences[0].Epoch = 4
		}, false, true},
		{"one epoch moved from twice", func(sh *ShardHistory, st *State) {
			st.Audit = []Audit{move(1, "eu-west", 5000), move(1, "ap-south", 6000)}
			st.Fences[0].Epoch = 2
		}, false, true},
		{"the fence moved without an audited move", func(sh *ShardHistory, st *State) {
			st.Audit, st.Fences[0] = nil, Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}
		}, false, true},
		{"an etcd transfer that names a state it did not replace", func(sh *ShardHistory, st *State) {
			// The move to ap-south was decided on the bootstrap entry (a
			// stale watch event) and written without comparing revisions.
			sh.Revisions[3] = fencingFrom(30, "ap-south", sh.Revisions[0], "ACTIVE")
			sh.Revisions[3].Epoch = 3
		}, true, true},
		{"an etcd transfer that skips an epoch", func(sh *ShardHistory, st *State) {
			sh.Revisions[3] = fencingFrom(30, "ap-south", sh.Revisions[2], "ACTIVE")
			sh.Revisions[3].Epoch, sh.Revisions[4].Epoch = 4, 4
		}, true, true},
		{"an etcd transfer over a transfer in flight", func(sh *ShardHistory, st *State) {
			sh.Revisions[2] = fencingFrom(21, "ap-south", sh.Revisions[0], "FAILED_OVER")
			sh.Revisions[2].Epoch = 2
		}, true, true},
		{"an etcd ownership change without a transfer", func(sh *ShardHistory, st *State) {
			sh.Revisions = append(sh.Revisions, active(40, 3, "us-east"))
		}, true, true},
		{"a SQL move without its etcd transfer", func(sh *ShardHistory, st *State) {
			sh.Revisions = sh.Revisions[:3]
			st.Fences[0].Epoch = 3
		}, true, true},
		{"an etcd transfer without its SQL move", func(sh *ShardHistory, st *State) {
			st.Audit = st.Audit[:1]
			st.Fences[0] = Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}
		}, true, true},
		{"a shard etcd never held", func(sh *ShardHistory, st *State) {
			sh.Revisions = nil
		}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, st := cleanHistory(), cleanState()
			sh, audit, fence := failoverHistory()
			st.Audit, st.Fences[0] = audit, fence
			// The fixture's operations ran before the moves, at epoch 1.
			tt.mutate(&sh, &st)
			o := opts()
			if tt.etcd {
				o.DirectoryHistory = map[int]ShardHistory{fxShard: sh}
			}
			res := Check(h, st, o)
			got := res.Of(I8)
			switch {
			case tt.want && len(got) == 0:
				t.Fatalf("no I8 violation; got:\n%s", describe(res.Violations))
			case !tt.want && len(got) > 0:
				t.Fatalf("clean stores flagged:\n%s", describe(got))
			}
			for _, v := range got {
				if v.Shard != fxShard {
					t.Errorf("%s names shard %d, want %d", v, v.Shard, fxShard)
				}
			}
			if tt.want {
				t.Logf("%s", got[0])
			}
		})
	}
}

// The I8 check reads no operation: a history without requests still has
// its ownership checked.
func TestOwnershipIsCheckedWithoutTraffic(t *testing.T) {
	st := cleanState()
	st.Records, st.Payments, st.Charges = nil, nil, nil
	st.Fences[0].Epoch = 2 // moved, unaudited
	res := Check(history.History{Start: fxStart}, st, opts())
	if len(res.Of(I8)) == 0 || res.Checked[I8] != 1 {
		t.Errorf("I8: %d violations over %d shards, want one over one", len(res.Of(I8)), res.Checked[I8])
	}
}
