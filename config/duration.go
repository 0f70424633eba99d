package config

import (
	"strings"
	"time"
)

// FormatDuration writes d as this file's durations are written: Go's
// syntax without its zero units, so 24h0m0s is 24h, 1m0s is 1m and
// 1h30m0s is 1h30m (1m30s, 500ms and 0s stay as they are). Messages about
// a setting use it, so that they quote durations as the user wrote them.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// shortDurations returns args with every time.Duration written by
// FormatDuration, for a message's Sprintf.
func shortDurations(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if d, ok := a.(time.Duration); ok {
			a = FormatDuration(d)
		}
		out[i] = a
	}
	return out
}
