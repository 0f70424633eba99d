package flagsuggest

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"owner", "owner", 0}, {"ownr", "owner", 1}, {"onwer", "owner", 2}, {"", "abc", 3}, {"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
