package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDownstreamWindowIsValidatedAgainstTheLeaseAndExplainedPastTTL(t *testing.T) {
	tests := []struct {
		name, fields string
		want         []string
		note         string // a substring of DownstreamWindowNote, "" for none
	}{
		{"unset", "ttl: 48h", nil, ""},
		{"a day", "ttl: 48h, downstream_window: 24h", nil, ""},
		{"negative", "downstream_window: -1h",
			[]string{`endpoints[0].downstream_window: must be positive (or unset for no guard), got -1h`}, ""},
		{"shorter than the lease", "lease: 30s, upstream_timeout: 10s, downstream_window: 10s",
			[]string{`endpoints[0].downstream_window: 10s is shorter than lease 30s: an attempt still within its lease ` +
				`would be past the provider's window; set it to the provider's key retention (e.g. 24h), at least lease`}, ""},
		{"longer than ttl", "ttl: 1h, downstream_window: 24h", nil, "24h is longer than ttl 1h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Replace(minimal, "path: /v1/payments}", "path: /v1/payments, "+tt.fields+"}", 1)
			cfg, err := Parse([]byte(data))
			var got []string
			for _, fe := range fieldErrors(t, err) {
				got = append(got, fe.Path+": "+fe.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("errors mismatch (-want +got):\n%s", diff)
			}
			if err != nil {
				return
			}
			note := cfg.Endpoints[0].DownstreamWindowNote()
			if (tt.note == "") != (note == "") || !strings.Contains(note, tt.note) {
				t.Errorf("DownstreamWindowNote() = %q, want one containing %q", note, tt.note)
			}
			if tt.name == "a day" && cfg.Endpoints[0].DownstreamWindow != 24*time.Hour {
				t.Errorf("DownstreamWindow = %s, want 24h", cfg.Endpoints[0].DownstreamWindow)
			}
		})
	}
}
