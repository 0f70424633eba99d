package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOnRetryConfigIsValidatedByName(t *testing.T) {
	const resolve = `resolve_path: "/internal/operations/{operation_id}", `
	tests := []struct {
		name, fields string
		want         []string
	}{
		{"replay", "on_retry: replay", nil},
		{"complete", resolve + "on_retry: complete", nil},
		{"unknown", "on_retry: resume", []string{`endpoints[0].on_retry: must be "replay" or "complete", got "resume"`}},
		{"complete without resolve path", "on_retry: complete",
			[]string{`endpoints[0].on_retry: "complete" needs resolve_path: an attempt whose outcome is unknown must be resolved before the rest runs`}},
		{"complete on async", resolve + "async: true, on_retry: complete",
			[]string{`endpoints[0].on_retry: "complete" is for synchronous endpoints`}},
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
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			if err == nil && cfg.Endpoints[0].Completes() != (tt.name == "complete") {
				t.Errorf("Completes() = %v", cfg.Endpoints[0].Completes())
			}
		})
	}
}
