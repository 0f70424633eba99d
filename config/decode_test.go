package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseReportsYAMLMistakesAsFieldPaths holds decoding mistakes to the
// same form as every other configuration error: "field.path: reason", in
// the operator's terms, never a Go type name or a bare line number.
func TestParseReportsYAMLMistakesAsFieldPaths(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []FieldError // Path and Reason; Line when not 0
	}{
		{"unknown top-level field", minimal + "regoin: eu\n",
			[]FieldError{{Path: "regoin", Reason: "unknown field; did you mean region?", Line: 10}}},
		{"unknown endpoint field", minimal + "  - {name: x, method: GET, path: /x, leese: 5s}\n",
			[]FieldError{{Path: "endpoints[2].leese", Reason: "unknown field; did you mean lease?", Line: 10}}},
		{"unknown field far from any", strings.Replace(minimal, "store: {", "store: {flavour: cockroach, ", 1),
			[]FieldError{{Path: "store.flavour", Reason: "unknown field; known fields: backend, connect_timeout, dsn, group_commit, max_conns, patroni", Line: 5}}},
		{"duration without unit", minimal + "defaults: {lease: 30}\n",
			[]FieldError{{Path: "defaults.lease", Reason: `"30" has no unit; write a duration such as 30s or 30ms`, Line: 10}}},
		// A key's retention is hours: "ttl: 24" meant a day.
		{"retention without unit", minimal + "defaults: {ttl: 24}\n",
			[]FieldError{{Path: "defaults.ttl", Reason: `"24" has no unit; write a duration such as 24h (hours) or 24m`, Line: 10}}},
		{"bad duration", minimal + "defaults: {lease: soon}\n",
			[]FieldError{{Path: "defaults.lease", Reason: `"soon" is not a duration; write a number with a unit: 300ms, 30s, 5m, 24h`, Line: 10}}},
		{"decimal size unit", minimal + "  - {name: x, method: GET, path: /x, max_request_bytes: 1MB}\n",
			[]FieldError{{Path: "endpoints[2].max_request_bytes", Reason: `"1MB" is not a size: want bytes, or a whole number followed by B, KiB, MiB or GiB`, Line: 10}}},
		{"negative size", minimal + "  - {name: x, method: GET, path: /x, max_response_bytes: -1}\n",
			[]FieldError{{Path: "endpoints[2].max_response_bytes", Reason: `"-1" is not a size: want bytes, or a whole number followed by B, KiB, MiB or GiB`, Line: 10}}},
		{"list where a string belongs", minimal + "worker_id: [a, b]\n",
			[]FieldError{{Path: "worker_id", Reason: "must be a string, got a list", Line: 10}}},
		{"string where a number belongs", strings.Replace(minimal, "store: {", "store: {max_conns: many, ", 1),
			[]FieldError{{Path: "store.max_conns", Reason: `must be a whole number, got "many"`, Line: 5}}},
		{"string where a bool belongs", minimal + "  - {name: x, method: GET, path: /x, async: sometimes}\n",
			[]FieldError{{Path: "endpoints[2].async", Reason: `must be true or false, got "sometimes"`, Line: 10}}},
		{"mapping where a list belongs", minimal + "etcd: {endpoints: {a: b}}\n",
			[]FieldError{{Path: "etcd.endpoints", Reason: "must be a list ([a, b] or one \"- item\" per line), got a mapping", Line: 10}}},
		{"field set twice", minimal + "region: eu-west\n",
			[]FieldError{{Path: "region", Reason: "set twice in the same mapping", Line: 10}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data))
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Parse error = %v (%T), want a *ValidationError", err, err)
			}
			if diff := cmp.Diff(tt.want, ve.Errors); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseReportsEveryMistakeAtOnce checks that decoding mistakes and
// invalid values come out together, so an operator fixes a file in one
// pass, and that none of them speaks Go.
func TestParseReportsEveryMistakeAtOnce(t *testing.T) {
	data := strings.Replace(minimal, "region: us-east", "region: US East", 1) + `defaults: {ttl: forever, lease: 30}
  - name: refund
    method: PSOT
    path: /v1/refunds
    max_request_bytes: 2MB
    retries: 3
    fingerprint: {exclude: /trace_id}
`
	// The appended endpoint belongs to the endpoints list above defaults;
	// move defaults after it.
	data = strings.Replace(data, "defaults: {ttl: forever, lease: 30}\n", "", 1) + "defaults: {ttl: forever, lease: 30}\n"
	_, err := Parse([]byte(data))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse error = %v, want a *ValidationError", err)
	}
	want := []string{
		"endpoints[2].max_request_bytes",
		"endpoints[2].retries",
		"endpoints[2].fingerprint.exclude",
		"defaults.ttl",
		"defaults.lease",
		"region",
		"endpoints[2].method",
	}
	if diff := cmp.Diff(want, paths(ve.Errors)); diff != "" {
		t.Errorf("error paths (-want +got):\n%s\nerror:\n%v", diff, err)
	}
	for _, goism := range []string{"time.Duration", "config.", "!!", "unmarshal", "[]string", "int64"} {
		if strings.Contains(err.Error(), goism) {
			t.Errorf("error speaks Go (%q):\n%v", goism, err)
		}
	}
	for _, fe := range ve.Errors {
		if strings.HasPrefix(fe.Reason, "line ") {
			t.Errorf("%s: reason is a bare line number: %q", fe.Path, fe.Reason)
		}
	}
}

// TestParseAcceptsYAMLShapesOperatorsUse covers what the field-by-field
// decoder must keep accepting: nulls for unset fields, anchors and merge
// keys, flow and block style.
func TestParseAcceptsYAMLShapesOperatorsUse(t *testing.T) {
	data := `
region: us-east
listen: 127.0.0.1:7101
upstream: http://127.0.0.1:7200
worker_id:
store: {dsn: "postgres://idemd@localhost/idemcoord", max_conns: 8}
auth: {issuer: dev, audience: idemcoord, hs256_secret_env: IDEMD_SECRET}
x-common: &common
  ttl: 1h
  failover: transfer
endpoints:
  - <<: *common
    name: create-payment
    method: POST
    path: /v1/payments
    failover: reject
  - {<<: *common, name: capture, method: POST, path: "/v1/payments/{id}/capture", async: true}
`
	// x-common is not a Config field: anchors must live in a known place.
	if _, err := Parse([]byte(data)); err == nil || !strings.Contains(err.Error(), "x-common: unknown field") {
		t.Fatalf("Parse = %v, want x-common reported as unknown", err)
	}
	data = strings.Replace(data, "x-common: &common\n  ttl: 1h\n  failover: transfer\nendpoints:\n",
		"endpoints:\n  - &common {name: base, method: PUT, path: /v1/base, ttl: 1h, failover: transfer}\n", 1)
	c := mustParse(t, data)
	got := []any{c.Store.MaxConns, c.WorkerID, len(c.Endpoints),
		c.Endpoints[1].Name, c.Endpoints[1].TTL.String(), string(c.Endpoints[1].Failover),
		c.Endpoints[2].Name, c.Endpoints[2].TTL.String(), string(c.Endpoints[2].Failover), c.Endpoints[2].Async}
	want := []any{8, "", 3, "create-payment", "1h0m0s", "reject", "capture", "1h0m0s", "transfer", true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

// TestValidationErrorsCarryTheirLine: an invalid value found by Validate is
// reported with the line it is written on, like a decoding mistake, so an
// operator finds endpoints[7] in a long file.
func TestValidationErrorsCarryTheirLine(t *testing.T) {
	data := strings.Replace(minimal, "{name: capture-payment, method: POST,", "{name: capture-payment, method: PSOT,", 1) +
		"defaults:\n  ttl: 1h\n  lease: 5s\n"
	_, err := Parse([]byte(data))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Parse = %v, want a *ValidationError", err)
	}
	got := map[string]int{}
	for _, fe := range ve.Errors {
		got[fe.Path] = fe.Line
	}
	want := map[string]int{"defaults.lease": 12, "endpoints[1].method": 9}
	for path, line := range want {
		if got[path] != line {
			t.Errorf("%s: line %d, want %d (errors %v)", path, got[path], line, ve.Errors)
		}
	}
}
