package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestContractFieldsAreValidatedByName(t *testing.T) {
	tests := []struct {
		name, fields string
		want         []string
	}{
		{"defaults", "", nil},
		{"shadow with a limit", "mode: shadow, limit: {rate: 10/s, burst: 20}", nil},
		{"rate per 30s", "limit: {rate: 5/30s}", nil},
		{"unknown mode", "mode: watch", []string{`endpoints[0].mode: must be "enforce" or "shadow", got "watch"`}},
		{"shadow async", "mode: shadow, async: true",
			[]string{"endpoints[0].mode: shadow is for synchronous endpoints; async endpoints depend on the gateway's 202"}},
		{"rate without unit", "limit: {rate: \"10\"}",
			[]string{`endpoints[0].limit.rate: "10": want N/unit, such as 10/s or 600/m`}},
		{"zero rate", "limit: {rate: 0/s}",
			[]string{`endpoints[0].limit.rate: "0/s": the count must be a finite positive number`}},
		{"bad unit", "limit: {rate: 10/week}",
			[]string{`endpoints[0].limit.rate: "10/week": the unit must be a positive duration (s, m, 30s)`}},
		{"burst alone", "limit: {burst: 5}", []string{"endpoints[0].limit.rate: required with limit.burst"}},
		{"negative burst", "limit: {rate: 1/s, burst: -1}", []string{"endpoints[0].limit.burst: must be positive, got -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := minimal
			if tt.fields != "" {
				data = strings.Replace(minimal, "path: /v1/payments}", "path: /v1/payments, "+tt.fields+"}", 1)
			}
			_, err := Parse([]byte(data))
			var got []string
			for _, fe := range fieldErrors(t, err) {
				got = append(got, fe.Path+": "+fe.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLimitRateMustBeAFinitePositiveNumber(t *testing.T) {
	for _, rate := range []string{"NaN/s", "nan/s", "Inf/s", "+Inf/m", "1e308/1ns", "5e-324/h"} {
		t.Run(rate, func(t *testing.T) {
			data := strings.Replace(minimal, "path: /v1/payments}", "path: /v1/payments, limit: {rate: \""+rate+"\"}}", 1)
			_, err := Parse([]byte(data))
			fes := fieldErrors(t, err)
			if len(fes) != 1 || fes[0].Path != "endpoints[0].limit.rate" || !strings.Contains(fes[0].Reason, rate) {
				t.Fatalf("rate %q: errors %v; want one naming endpoints[0].limit.rate and the value", rate, fes)
			}
		})
	}
}

func TestLimitRateIsTokensPerSecond(t *testing.T) {
	tests := []struct {
		rate string
		want float64
	}{
		{"10/s", 10}, {"600/m", 10}, {"5/30s", 5.0 / 30}, {"1/h", 1.0 / 3600}, {"2.5/s", 2.5},
	}
	for _, tt := range tests {
		got, err := Limit{Rate: tt.rate}.PerSecond()
		if err != nil || got != tt.want {
			t.Errorf("PerSecond(%q) = %v, %v; want %v", tt.rate, got, err, tt.want)
		}
	}
}

func TestSecretsConfigIsValidatedByName(t *testing.T) {
	t.Setenv("SECRETS_TEST_KEY", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	t.Setenv("SECRETS_SHORT_KEY", "AAAA")
	tests := []struct {
		name, fields string
		want         []string
	}{
		{"redact", "secrets: {mode: redact, fields: [/api_key]}", nil},
		{"encrypt", "secrets: {mode: encrypt, fields: [/a, /b~1c], keys: [{id: k1, env: SECRETS_TEST_KEY}]}", nil},
		{"no mode", "secrets: {fields: [/a]}", []string{`endpoints[0].secrets.mode: must be "redact" or "encrypt", got ""`}},
		{"no fields", "secrets: {mode: redact}", []string{"endpoints[0].secrets.fields: at least one JSON pointer is required"}},
		{"bad pointer", "secrets: {mode: redact, fields: [a]}", []string{`endpoints[0].secrets.fields[0]: "a": a JSON pointer starts with "/"`}},
		{"encrypt without keys", "secrets: {mode: encrypt, fields: [/a]}", []string{"endpoints[0].secrets.keys: at least one key is required to encrypt"}},
		{"short key", "secrets: {mode: encrypt, fields: [/a], keys: [{id: k1, env: SECRETS_SHORT_KEY}]}",
			[]string{"endpoints[0].secrets.keys[0]: the key must be 32 bytes in standard base64"}},
		{"unset env", "secrets: {mode: encrypt, fields: [/a], keys: [{id: k1, env: SECRETS_UNSET_KEY}]}",
			[]string{"endpoints[0].secrets.keys[0]: environment variable SECRETS_UNSET_KEY is unset or empty"}},
		{"duplicate id", "secrets: {mode: encrypt, fields: [/a], keys: [{id: k1, env: SECRETS_TEST_KEY}, {id: k1, env: SECRETS_TEST_KEY}]}",
			[]string{`endpoints[0].secrets.keys[1].id: "k1" is already used by keys[0]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Replace(minimal, "path: /v1/payments}", "path: /v1/payments, "+tt.fields+"}", 1)
			_, err := Parse([]byte(data))
			var got []string
			for _, fe := range fieldErrors(t, err) {
				got = append(got, fe.Path+": "+fe.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplayConfigIsValidatedByName(t *testing.T) {
	tests := []struct {
		name, fields string
		want         []string
	}{
		{"reference", `replay: {mode: reference, resource_path: "/v1/payments/{resource_id}", keep: [/id, /amount]}`, nil},
		{"snapshot keep", "replay: {keep: [/id]}", nil},
		{"unknown mode", "replay: {mode: live}", []string{`endpoints[0].replay.mode: must be "snapshot" or "reference", got "live"`}},
		{"reference without path", "replay: {mode: reference}",
			[]string{`endpoints[0].replay.resource_path: required for mode "reference": the upstream path of the resource, with {resource_id}`}},
		{"path without id", "replay: {mode: reference, resource_path: /v1/payments}",
			[]string{`endpoints[0].replay.resource_path: "/v1/payments" must start with / and contain {resource_id} once`}},
		{"path on snapshot", `replay: {resource_path: "/v1/p/{resource_id}"}`, []string{`endpoints[0].replay.resource_path: only for mode "reference"`}},
		{"bad keep", "replay: {keep: [id]}", []string{`endpoints[0].replay.keep[0]: "id": a JSON pointer starts with "/"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := strings.Replace(minimal, "path: /v1/payments}", "path: /v1/payments, "+tt.fields+"}", 1)
			_, err := Parse([]byte(data))
			var got []string
			for _, fe := range fieldErrors(t, err) {
				got = append(got, fe.Path+": "+fe.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
