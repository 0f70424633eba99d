package idempotency

import (
	"errors"
	"testing"
)

func TestParseStage(t *testing.T) {
	tests := []struct {
		in      string
		want    Stage
		stored  string
		wantErr bool
	}{
		{in: "captured", want: Stage{Name: "captured"}, stored: "captured"},
		{in: "reserved;reversible", want: Stage{Name: "reserved", Reversible: true}, stored: "reserved;reversible"},
		{in: " reserved; reversible=?1 ", want: Stage{Name: "reserved", Reversible: true}, stored: "reserved;reversible"},
		{in: "reserved;reversible=?0", want: Stage{Name: "reserved"}, stored: "reserved"},
		{in: "cancelled", want: Stage{Name: StageCancelled}, stored: "cancelled"},
		{in: "sending", want: Stage{Name: "sending"}, stored: "sending"},
		{in: "", wantErr: true},
		{in: "reserved;", wantErr: true},
		{in: "reserved;undoable", wantErr: true},
		{in: "1st", wantErr: true},
		{in: "two words", wantErr: true},
		{in: `"quoted"`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseStage(tt.in)
		if tt.wantErr {
			if !errors.Is(err, ErrStage) {
				t.Errorf("ParseStage(%q) = %+v, %v; want ErrStage", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.stored {
			t.Errorf("ParseStage(%q) = %+v (%q), %v; want %+v (%q)", tt.in, got, got.String(), err, tt.want, tt.stored)
		}
	}
}
