package shard_test

import (
	"testing"

	"github.com/idemcoord/idemcoord/shard"
)

// TestOfNeverChangesForADeployment pins the mapping: every fence row, etcd
// directory key and stored record is filed under the shard Of returned
// when it was written, so a change of hash would strand them all.
func TestOfNeverChangesForADeployment(t *testing.T) {
	tests := []struct {
		actor           string
		of1024, ofSeven int
	}{
		{"", 453, 2},
		{"acme/alice", 744, 3},
		{"acme/bob", 587, 2},
		{"tenant-7/user-42", 814, 6},
	}
	for _, tc := range tests {
		if got := shard.Of(tc.actor, shard.DefaultCount); got != tc.of1024 {
			t.Errorf("Of(%q, %d) = %d, want %d", tc.actor, shard.DefaultCount, got, tc.of1024)
		}
		if got := shard.Of(tc.actor, 7); got != tc.ofSeven {
			t.Errorf("Of(%q, 7) = %d, want %d", tc.actor, got, tc.ofSeven)
		}
	}
}
