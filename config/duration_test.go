package config

import (
	"strings"
	"testing"
	"time"
)

// TestConfigErrorsQuoteDurationsAsWritten: a message about a duration
// setting quotes durations the way the file writes them (11m, 24h), not
// Go's 11m0s or 24h0m0s.
func TestConfigErrorsQuoteDurationsAsWritten(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", time.Minute: "1m", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s",
		500 * time.Millisecond: "500ms", 0: "0s", time.Hour + 5*time.Second: "1h0m5s", -time.Hour: "-1h",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	src := strings.Replace(Example, "drain_timeout: 30s", "drain_timeout: 11m", 1)
	src = strings.Replace(src, "  leeway: 30s", "  leeway: 1h", 1)
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	_, err := Parse([]byte(src))
	if err == nil {
		t.Fatal("Parse accepted drain_timeout 11m and leeway 1h")
	}
	for _, want := range []string{"drain_timeout: must be at most 10m, got 11m", "auth.leeway: must be within 0s and 5m, got 1h"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "0m0s") || strings.Contains(err.Error(), "m0s") {
		t.Errorf("error quotes Go's duration form: %v", err)
	}
}
