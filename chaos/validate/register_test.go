package validate

import (
	"testing"

	"github.com/idemcoord/idemcoord/chaos/history"
)

func TestRegisterExcerptIsTheShortestThatShowsTheMisfit(t *testing.T) {
	h, st := cleanHistory(), cleanState()
	// Noise that fits: more replays. The misfit: a second success with a
	// different stored response.
	for i := int64(0); i < 6; i++ {
		r := req(10+i, 30+10*i, 35+10*i, 201)
		r.Replayed = true
		h.Ops = append(h.Ops, r)
	}
	odd := req(20, 200, 210, 201)
	odd.ResponseHash = history.Hash([]byte("another response"))
	h.Ops = append(h.Ops, odd)
	got := Check(h, st, opts()).Of(Register)
	if len(got) != 1 {
		t.Fatalf("register violations = %v, want 1", got)
	}
	if n := len(got[0].Excerpt); n != 2 {
		t.Fatalf("excerpt has %d operations, want the 2 that disagree: %+v", n, got[0].Excerpt)
	}
	if got[0].Excerpt[1].Seq != odd.Seq {
		t.Errorf("excerpt ends with seq %d, want the odd answer %d", got[0].Excerpt[1].Seq, odd.Seq)
	}
}

func TestRegisterLetsAnUnknownOutcomeHappenOrNot(t *testing.T) {
	lost := func(seq, call int64) history.Operation {
		op := req(seq, call, call+5, 504)
		op.ResponseHash = ""
		return op
	}
	tests := []struct {
		name string
		ops  []history.Operation
		fits bool
	}{
		{"unknown, then its success", []history.Operation{lost(1, 0), req(2, 10, 20, 201)}, true},
		{"unknown, then a 422 for another body: the unknown happened",
			[]history.Operation{lost(1, 0), mismatch(2, 10)}, true},
		{"422 with nothing that could have written", []history.Operation{mismatch(1, 0)}, false},
		{"two successes with different answers", []history.Operation{req(1, 0, 5, 201), withResp(req(2, 10, 15, 200), "x")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := &index{opts: Options{}.withDefaults()}
			msg, _ := ix.fitRegister(tt.ops)
			if fits := msg == ""; fits != tt.fits {
				t.Errorf("fits = %v (%q), want %v", fits, msg, tt.fits)
			}
		})
	}
}

func mismatch(seq, call int64) history.Operation {
	op := req(seq, call, call+5, 422)
	op.BodyHash = history.Hash(body("99.00"))
	return op
}

func withResp(op history.Operation, resp string) history.Operation {
	op.ResponseHash = history.Hash([]byte(resp))
	return op
}

func TestCoverageCountsFromHistoryAndState(t *testing.T) {
	h, st := cleanHistory(), cleanState()
	lost := req(0, -30, -25, 0)
	lost.Error, lost.Status = history.ErrTimeout, 0
	h.Ops = append([]history.Operation{lost}, h.Ops...)
	h.Ops = append(h.Ops,
		history.Operation{Seq: 7, Kind: history.KindProbe, Probe: history.ProbeStaleEpochRejected, Shard: fxShard},
		history.Operation{Seq: 8, Kind: history.KindProbe, Probe: history.ProbeRetry40001, Shard: -1})
	st.Records[0].Attempts = 2
	st.Audit = []Audit{move(1, "eu-west", 5)} // inside the traffic's span
	st.Fences[0] = Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}
	res := Check(h, st, opts())
	want := Coverage{StaleEpochRejected: 1, Takeovers: 1, Retries40001: 1, AmbiguousResolved: 1, MovesUnderLoad: 1}
	if res.Coverage != want {
		t.Errorf("coverage = %+v, want %+v", res.Coverage, want)
	}
	if !res.Green() {
		t.Errorf("run not green: violations %v, missing %v", res.Violations, res.Coverage.Missing())
	}
	if clean := Check(cleanHistory(), cleanState(), opts()); clean.Green() || len(clean.Coverage.Missing()) != 5 {
		t.Errorf("a run without coverage is green (missing %v)", clean.Coverage.Missing())
	}
}

func TestI6FlagsAFirstRunServedByARegionThatDidNotOwnTheShard(t *testing.T) {
	home := func(int) string { return "us-east" }
	tests := []struct {
		name   string
		served string
		audit  []Audit
		fence  Fence
		flag   bool
	}{
		{"the home region, never moved", "us-east", nil, Fence{Shard: fxShard, Epoch: 1, OwnerRegion: "us-east"}, false},
		{"another region, never moved", "eu-west", nil, Fence{Shard: fxShard, Epoch: 1, OwnerRegion: "us-east"}, true},
		{"the new owner after a move", "eu-west", []Audit{move(1, "eu-west", -100)}, Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}, false},
		{"the old owner long after a move", "us-east", []Audit{move(1, "eu-west", -5000)}, Fence{Shard: fxShard, Epoch: 2, OwnerRegion: "eu-west"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, st := cleanHistory(), cleanState()
			for i := range h.Ops {
				h.Ops[i].ServedBy = tt.served
			}
			st.Audit, st.Fences = tt.audit, []Fence{tt.fence}
			o := opts()
			o.InitialOwner = home
			got := Check(h, st, o).Of(I6)
			if flagged := len(got) > 0; flagged != tt.flag {
				t.Errorf("I6 flagged = %v (%v), want %v", flagged, got, tt.flag)
			}
		})
	}
}

func TestAFailoverRejectThenSuccessIsNotAnAmbiguityResolved(t *testing.T) {
	h, st := cleanHistory(), cleanState()
	reject := req(0, -30, -25, 503)
	h.Ops = append([]history.Operation{reject}, h.Ops...)
	if n := Check(h, st, opts()).Coverage.AmbiguousResolved; n != 0 {
		t.Errorf("ambiguous resolved = %d after a 503 (which says nothing ran), want 0", n)
	}
	lost := req(0, -30, -25, 504)
	h.Ops[0] = lost
	if n := Check(h, st, opts()).Coverage.AmbiguousResolved; n != 1 {
		t.Errorf("ambiguous resolved = %d after a 504 then a success, want 1", n)
	}
}
