package downstream

import (
	"testing"
	"time"
)

func TestPassedCountsFromTheFirstClaimAndIncludesTheWindowsEnd(t *testing.T) {
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const day = 24 * time.Hour
	tests := []struct {
		name   string
		first  time.Time
		now    time.Time
		window time.Duration
		want   bool
	}{
		{"no window", first, first.Add(1000 * day), 0, false},
		{"within", first, first.Add(day - time.Microsecond), day, false},
		{"at the end", first, first.Add(day), day, true},
		{"after", first, first.Add(day + time.Hour), day, true},
		{"no first claim known", time.Time{}, first, day, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Passed(tt.first, tt.now, tt.window); got != tt.want {
				t.Errorf("Passed = %v, want %v", got, tt.want)
			}
		})
	}
}
