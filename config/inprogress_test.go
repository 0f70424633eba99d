package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestInProgressConfigIsValidatedByName(t *testing.T) {
	tests := []struct {
		name, fields string
		want         []string
	}{
		{"wait", "in_progress: {wait: 3s}", nil},
		{"wait and waiters", "in_progress: {wait: 500ms, max_waiters: 50}", nil},
		{"negative wait", "in_progress: {wait: -1s}",
			[]string{"endpoints[0].in_progress.wait: must be 0 (answer 409 at once) or positive, got -1s"}},
		{"wait too long", "in_progress: {wait: 2m}",
			[]string{"endpoints[0].in_progress.wait: 2m is longer than 1m; a held request costs a client connection, and clients time out"}},
		{"wait on async", "async: true, in_progress: {wait: 1s}",
			[]string{"endpoints[0].in_progress.wait: only for synchronous endpoints: an async retry is answered 202 at once (wait on GET /v1/operations/{id}?wait= instead)"}},
		{"negative waiters", "in_progress: {max_waiters: -5}", []string{"endpoints[0].in_progress.max_waiters: must be positive, got -5"}},
		{"misspelt", "in_progress: {wiat: 1s}", nil}, // reported by the decoder, checked below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Replace(minimal, "path: /v1/payments}", "path: /v1/payments, "+tt.fields+"}", 1)
			cfg, err := Parse([]byte(data))
			if tt.name == "misspelt" {
				if err == nil || !strings.Contains(err.Error(), "wiat") {
					t.Fatalf("misspelt field: %v, want an error naming it", err)
				}
				return
			}
			var got []string
			for _, fe := range fieldErrors(t, err) {
				got = append(got, fe.Path+": "+fe.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
			if err == nil && tt.name == "wait" {
				ip := cfg.Endpoints[0].InProgress
				if ip.Wait != 3*time.Second || ip.MaxWaitersOrDefault() != DefaultMaxWaiters {
					t.Errorf("in_progress = %+v (max waiters %d), want wait 3s and the default", ip, ip.MaxWaitersOrDefault())
				}
			}
		})
	}
}
