package history

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHistoryRoundTripsThroughJSONLines(t *testing.T) {
	r := NewRecorder()
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				call := r.Now()
				r.Add(Operation{Kind: KindRequest, Call: call, Return: r.Now(), ClientID: c, Key: "k", Intent: int64(i),
					Status: 201, Shard: 3, BodyHash: Hash([]byte("b"))})
			}
		}()
	}
	wg.Wait()
	r.Add(Operation{Kind: KindFault, Call: 5, Return: 9, Shard: -1, Detail: "kill us-east"})
	want := r.History()
	if len(want.Ops) != 101 {
		t.Fatalf("recorded %d operations, want 101", len(want.Ops))
	}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Start.Equal(want.Start) {
		t.Errorf("start = %v, want %v", got.Start, want.Start)
	}
	got.Start = want.Start
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for i := 1; i < len(got.Ops); i++ {
		if got.Ops[i].Call < got.Ops[i-1].Call {
			t.Fatalf("operations not sorted by call time at %d", i)
		}
	}
}

func TestReadJSONLRefusesOtherFiles(t *testing.T) {
	for _, in := range []string{"", `{"format":"other"}`, "not json"} {
		if _, err := ReadJSONL(strings.NewReader(in)); !errors.Is(err, ErrFormat) {
			t.Errorf("ReadJSONL(%q) = %v, want ErrFormat", in, err)
		}
	}
}

func TestOperationOutcomeClasses(t *testing.T) {
	tests := []struct {
		name                         string
		op                           Operation
		ack, unknown, mis, amb, ends bool
	}{
		{"created", Operation{Kind: KindRequest, Status: 201}, true, false, false, false, true},
		{"mismatch", Operation{Kind: KindRequest, Status: 422}, false, false, true, false, true},
		{"gateway timeout", Operation{Kind: KindRequest, Status: 504}, false, true, false, true, false},
		{"failover reject", Operation{Kind: KindRequest, Status: 503}, false, true, false, false, false},
		{"lost answer", Operation{Kind: KindRequest, Error: ErrAfterSend}, false, true, false, true, false},
		{"never sent", Operation{Kind: KindRequest, Error: ErrBeforeSend}, false, false, false, false, false},
		{"in progress", Operation{Kind: KindRequest, Status: 409}, false, false, false, false, false},
		{"probe", Operation{Kind: KindProbe, Status: 201}, false, false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.op.Acknowledged(); got != tt.ack {
				t.Errorf("Acknowledged = %v, want %v", got, tt.ack)
			}
			if got := tt.op.Unknown(); got != tt.unknown {
				t.Errorf("Unknown = %v, want %v", got, tt.unknown)
			}
			if got := tt.op.Mismatch(); got != tt.mis {
				t.Errorf("Mismatch = %v, want %v", got, tt.mis)
			}
			if got := tt.op.Ambiguous(); got != tt.amb {
				t.Errorf("Ambiguous = %v, want %v", got, tt.amb)
			}
			if got := tt.op.Ends(); got != tt.ends {
				t.Errorf("Ends = %v, want %v", got, tt.ends)
			}
		})
	}
}

func TestOperationLogValueHidesTheKey(t *testing.T) {
	op := Operation{Kind: KindRequest, Key: "secret-key-123"}
	if s := op.LogValue().String(); strings.Contains(s, "secret-key-123") || !strings.Contains(s, KeyHash("secret-key-123")) {
		t.Errorf("LogValue = %s: want the key's hash and not the key", s)
	}
}
