package main

import (
	"strings"
	"testing"
)

// TestBadInvocationsSayWhatIsWanted: a check-config without its FILE, or a
// --log-level that is no level, is refused with what is wanted, in idemd's
// words (not cobra's "accepts 1 arg(s)" or slog's "unknown name").
func TestBadInvocationsSayWhatIsWanted(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"check-config"}, "check-config takes one FILE (idemd check-config idemd.yaml), got 0 arguments"},
		{[]string{"check-config", "a.yaml", "b.yaml"}, "check-config takes one FILE (idemd check-config idemd.yaml), got 2 arguments"},
		{[]string{"run", "--config", "x.yaml", "--log-level", "loud"}, `--log-level: must be debug, info, warn or error, got "loud"`},
	} {
		_, _, err := runCLI(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("idemd %s: err %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}
