package fencing_test

import (
	"testing"

	"github.com/idemcoord/idemcoord/fencing"
)

func TestAdmitsOnlyTheOwnerRegionAtItsEpoch(t *testing.T) {
	tests := []struct {
		name   string
		tok    fencing.Token
		epoch  int64
		owner  string
		admits bool
	}{
		{"owner at its epoch", fencing.Token{Epoch: 3, Region: "us-east"}, 3, "us-east", true},
		{"owner at an old epoch", fencing.Token{Epoch: 2, Region: "us-east"}, 3, "us-east", false},
		{"owner ahead of the store", fencing.Token{Epoch: 4, Region: "us-east"}, 3, "us-east", false},
		{"another region at the epoch", fencing.Token{Epoch: 3, Region: "eu-west"}, 3, "us-east", false},
		{"unowned shard", fencing.Token{Epoch: 1, Region: "us-east"}, 1, "", false},
		{"unowned shard, token without region", fencing.Token{Epoch: 1}, 1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tok.Admits(tt.epoch, tt.owner); got != tt.admits {
				t.Fatalf("%s admitted by epoch %d owner %q = %v, want %v", tt.tok, tt.epoch, tt.owner, got, tt.admits)
			}
		})
	}
}
