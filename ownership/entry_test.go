package ownership

import (
	"errors"
	"testing"
)

func TestDecodeEntryRefusesWhatBreaksAnInvariant(t *testing.T) {
	tests := []struct {
		name, value string
		ok          bool
	}{
		{"active", `{"owner":"us-east","epoch":1,"state":"ACTIVE"}`, true},
		{"failed over", `{"owner":"eu-west","epoch":4,"state":"FAILED_OVER"}`, true},
		{"fencing with transfer", `{"owner":"eu-west","epoch":2,"state":"FENCING","transfer":{"from_owner":"us-east","from_epoch":1,"from_state":"ACTIVE","final":"ACTIVE","operator":"o","reason":"r"}}`, true},
		{"fencing without transfer", `{"owner":"eu-west","epoch":2,"state":"FENCING"}`, false},
		{"transfer when active", `{"owner":"eu-west","epoch":2,"state":"ACTIVE","transfer":{"from_owner":"us-east","from_epoch":1}}`, false},
		{"no owner", `{"owner":"","epoch":1,"state":"ACTIVE"}`, false},
		{"epoch zero", `{"owner":"us-east","epoch":0,"state":"ACTIVE"}`, false},
		{"unknown state", `{"owner":"us-east","epoch":1,"state":"MAYBE"}`, false},
		{"not json", `us-east`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, err := decodeEntry(3, []byte(tc.value), 42)
			if tc.ok != (err == nil) {
				t.Fatalf("decode %s: %v, want ok=%v", tc.value, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			if tc.ok && (e.Shard != 3 || e.ModRevision != 42) {
				t.Fatalf("decoded %+v, want shard 3 rev 42", e)
			}
			if tc.ok {
				back, err := decodeEntry(3, []byte(e.encode()), 42)
				if err != nil || back.encode() != e.encode() {
					t.Fatalf("round trip %s -> %s, %v", e.encode(), back.encode(), err)
				}
			}
		})
	}
}
