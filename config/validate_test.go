package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// minimal is the smallest valid file; tests change one thing each.
const minimal = `
region: us-east
listen: 127.0.0.1:7101
upstream: http://127.0.0.1:7200
store: {dsn: "postgres://idemd@localhost/idemcoord"}
auth: {issuer: dev, audience: idemcoord, hs256_secret_env: IDEMD_SECRET}
endpoints:
  - {name: create-payment, method: POST, path: /v1/payments}
  - {name: capture-payment, method: POST, path: "/v1/payments/{id}/capture"}
`

func mustParse(t *testing.T, data string) *Config {
	t.Helper()
	c, err := Parse([]byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

// fieldErrors returns the FieldErrors of a *ValidationError, failing the
// test if err is another kind of error.
func fieldErrors(t *testing.T, err error) []FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	return ve.Errors
}

func paths(fes []FieldError) []string {
	var out []string
	for _, fe := range fes {
		out = append(out, fe.Path)
	}
	return out
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want []string // field paths, in order
	}{
		{"valid", func(c *Config) {}, nil},
		{"region upper case", func(c *Config) { c.Region = "US_East" }, []string{"region"}},
		{"region missing", func(c *Config) { c.Region = "" }, []string{"region"}},
		{"region too long", func(c *Config) { c.Region = strings.Repeat("a", 33) }, []string{"region"}},
		{"listen without port", func(c *Config) { c.Listen = "localhost" }, []string{"listen"}},
		{"listen bad port", func(c *Config) { c.Listen = ":99999" }, []string{"listen"}},
		{"listen missing", func(c *Config) { c.Listen = "" }, []string{"listen"}},
		{"upstream ftp", func(c *Config) { c.Upstream = "ftp://files" }, []string{"upstream"}},
		{"upstream relative", func(c *Config) { c.Upstream = "/api" }, []string{"upstream"}},
		{"upstream with query", func(c *Config) { c.Upstream = "http://api?x=1" }, []string{"upstream"}},
		{"upstream missing", func(c *Config) { c.Upstream = "" }, []string{"upstream"}},
		{"worker id with newline", func(c *Config) { c.WorkerID = "a\nb" }, []string{"worker_id"}},
		{"dsn missing", func(c *Config) { c.Store.DSN = "" }, []string{"store.dsn"}},
		{"max conns negative", func(c *Config) { c.Store.MaxConns = -1 }, []string{"store.max_conns"}},
		{"group commit batch too large", func(c *Config) { c.Store.GroupCommit.MaxBatch = 5000 }, []string{"store.group_commit.max_batch"}},
		{"group commit batch negative", func(c *Config) { c.Store.GroupCommit.MaxBatch = -1 }, []string{"store.group_commit.max_batch"}},
		{"group commit queue wait negative", func(c *Config) { c.Store.GroupCommit.MaxQueueWait = -time.Second }, []string{"store.group_commit.max_queue_wait"}},
		{"etcd endpoint not a URL", func(c *Config) { c.Etcd.Endpoints = []string{"http://a:2379", "127.0.0.1:2379"} }, []string{"etcd.endpoints[1]"}},
		{"etcd dial timeout", func(c *Config) { c.Etcd.DialTimeout = -time.Second }, []string{"etcd.dial_timeout"}},
		{"auth no key source", func(c *Config) { c.Auth.HS256SecretEnv = "" }, []string{"auth"}},
		{"auth two secrets", func(c *Config) { c.Auth.HS256SecretFile = "/s" }, []string{"auth"}},
		{"auth env is a secret", func(c *Config) { c.Auth.HS256SecretEnv = "hunter2 hunter2" }, []string{"auth.hs256_secret_env"}},
		{"auth issuer", func(c *Config) { c.Auth.Issuer = "" }, []string{"auth.issuer"}},
		{"auth audience", func(c *Config) { c.Auth.Audience = "" }, []string{"auth.audience"}},
		{"auth empty key file", func(c *Config) { c.Auth.PublicKeyFiles = []string{"/k.pem", ""} }, []string{"auth.public_key_files[1]"}},
		{"auth leeway", func(c *Config) { c.Auth.Leeway = time.Hour }, []string{"auth.leeway"}},
		{"defaults lease inherited", func(c *Config) {
			c.Defaults.Lease = 5 * time.Second
			for i := range c.Endpoints {
				c.Endpoints[i].Lease = 5 * time.Second
			}
		}, []string{"defaults.lease"}},
		{"no endpoints", func(c *Config) { c.Endpoints = nil }, []string{"endpoints"}},
		{"lease shorter than upstream timeout", func(c *Config) { c.Endpoints[1].Lease = 5 * time.Second }, []string{"endpoints[1].lease"}},
		{"lease equals upstream timeout", func(c *Config) { c.Endpoints[0].Lease = 10 * time.Second }, []string{"endpoints[0].lease"}},
		{"ttl shorter than lease", func(c *Config) { c.Endpoints[0].TTL = 10 * time.Second }, []string{"endpoints[0].ttl"}},
		{"zero ttl", func(c *Config) { c.Endpoints[0].TTL = 0 }, []string{"endpoints[0].ttl"}},
		{"failover", func(c *Config) { c.Endpoints[0].Failover = "maybe" }, []string{"endpoints[0].failover"}},
		{"duplicate name", func(c *Config) { c.Endpoints[1].Name = "create-payment" }, []string{"endpoints[1].name"}},
		{"duplicate route", func(c *Config) {
			c.Endpoints = append(c.Endpoints, Endpoint{Name: "capture2", Method: "POST", Path: "/v1/payments/{pid}/capture"})
			c.fillDefaults()
		}, []string{"endpoints[2].path"}},
		{"same path other method", func(c *Config) { c.Endpoints[1].Path, c.Endpoints[1].Method = "/v1/payments", "PUT" }, nil},
		{"bad name", func(c *Config) { c.Endpoints[0].Name = "Create Payment" }, []string{"endpoints[0].name"}},
		{"missing name", func(c *Config) { c.Endpoints[0].Name = "" }, []string{"endpoints[0].name"}},
		{"lower-case method", func(c *Config) { c.Endpoints[0].Method = "post" }, []string{"endpoints[0].method"}},
		{"misspelt method", func(c *Config) { c.Endpoints[0].Method = "PSOT" }, []string{"endpoints[0].method"}},
		{"made-up method", func(c *Config) { c.Endpoints[1].Method = "CHARGE" }, []string{"endpoints[1].method"}},
		{"missing method", func(c *Config) { c.Endpoints[1].Method = "" }, []string{"endpoints[1].method"}},
		{"every real method", func(c *Config) {
			for _, m := range []string{"GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"} {
				c.Endpoints = append(c.Endpoints, Endpoint{Name: "m-" + strings.ToLower(m), Method: m, Path: "/v1/m"})
			}
			c.fillDefaults()
		}, nil},
		{"relative path", func(c *Config) { c.Endpoints[0].Path = "v1/payments" }, []string{"endpoints[0].path"}},
		{"trailing slash", func(c *Config) { c.Endpoints[0].Path = "/v1/payments/" }, []string{"endpoints[0].path"}},
		{"partial param", func(c *Config) { c.Endpoints[0].Path = "/v1/p-{id}" }, []string{"endpoints[0].path"}},
		{"repeated param", func(c *Config) { c.Endpoints[0].Path = "/v1/{id}/{id}" }, []string{"endpoints[0].path"}},
		{"dot segment", func(c *Config) { c.Endpoints[0].Path = "/v1/../payments" }, []string{"endpoints[0].path"}},
		{"key mode", func(c *Config) { c.Endpoints[0].Key = "sometimes" }, []string{"endpoints[0].key"}},
		{"exclude not a pointer", func(c *Config) { c.Endpoints[0].Fingerprint.Exclude = []string{"/ok", "trace_id"} }, []string{"endpoints[0].fingerprint.exclude[1]"}},
		{"store status", func(c *Config) { c.Endpoints[0].StoreStatuses = []string{"2xx", "6xx"} }, []string{"endpoints[0].store_statuses[1]"}},
		{"retry status range", func(c *Config) { c.Endpoints[1].RetryStatuses = []string{"504-502"} }, []string{"endpoints[1].retry_statuses[0]"}},
		{"response header", func(c *Config) { c.Endpoints[0].ResponseHeaders = []string{"Content Type"} }, []string{"endpoints[0].response_headers[0]"}},
		{"max request bytes", func(c *Config) { c.Endpoints[0].MaxRequestBytes = -1 }, []string{"endpoints[0].max_request_bytes"}},
		{"max response bytes", func(c *Config) { c.Endpoints[1].MaxResponseBytes = 0 }, []string{"endpoints[1].max_response_bytes"}},
		{"resolve path without id", func(c *Config) { c.Endpoints[0].ResolvePath = "/internal/ops" }, []string{"endpoints[0].resolve_path"}},
		{"resolve path other param", func(c *Config) { c.Endpoints[0].ResolvePath = "/internal/{x}/{operation_id}" }, []string{"endpoints[0].resolve_path"}},
		{"upstream dedup by operation id", func(c *Config) {
			c.Endpoints[0].ResolvePath, c.Endpoints[0].UpstreamDedup = "/internal/operations/{operation_id}", UpstreamDedupOperationID
		}, nil},
		{"upstream dedup none", func(c *Config) { c.Endpoints[0].UpstreamDedup = UpstreamDedupNone }, nil},
		{"upstream dedup without resolve path", func(c *Config) { c.Endpoints[0].UpstreamDedup = UpstreamDedupOperationID },
			[]string{"endpoints[0].upstream_dedup"}},
		{"upstream dedup misspelt", func(c *Config) {
			c.Endpoints[0].ResolvePath, c.Endpoints[0].UpstreamDedup = "/internal/operations/{operation_id}", "operation-id"
		}, []string{"endpoints[0].upstream_dedup"}},
		{"cancel path", func(c *Config) {
			c.Endpoints[0].Async, c.Endpoints[0].ResolvePath = true, "/internal/operations/{operation_id}"
			c.Endpoints[0].CancelPath = "/internal/operations/{operation_id}/cancel"
		}, nil},
		{"cancel path without id", func(c *Config) {
			c.Endpoints[0].Async, c.Endpoints[0].ResolvePath = true, "/internal/operations/{operation_id}"
			c.Endpoints[0].CancelPath = "/internal/cancel"
		}, []string{"endpoints[0].cancel_path"}},
		{"cancel path on a sync endpoint", func(c *Config) {
			c.Endpoints[0].ResolvePath = "/internal/operations/{operation_id}"
			c.Endpoints[0].CancelPath = "/internal/operations/{operation_id}/cancel"
		}, []string{"endpoints[0].cancel_path"}},
		{"cancel path without resolve path", func(c *Config) {
			c.Endpoints[0].Async, c.Endpoints[0].CancelPath = true, "/internal/operations/{operation_id}/cancel"
		}, []string{"endpoints[0].cancel_path"}},
		{"several at once", func(c *Config) {
			c.Region = ""
			c.Auth.HS256SecretEnv = ""
			c.Endpoints[0].Failover = "maybe"
			c.Endpoints[1].Lease = time.Second
		}, []string{"region", "auth", "endpoints[0].failover", "endpoints[1].lease"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, minimal)
			tt.edit(c)
			got := paths(fieldErrors(t, c.Validate()))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error paths (-want +got):\n%s\nerror: %v", diff, c.Validate())
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	c := mustParse(t, minimal)
	c.Endpoints[0].Failover = "maybe"
	c.Endpoints[1].Lease = 5 * time.Second
	c.Auth.HS256SecretEnv = ""
	want := strings.Join([]string{
		`auth: one of hs256_secret_file, hs256_secret_env, public_key_files is required`,
		`endpoints[0].failover: must be "reject" or "transfer", got "maybe"`,
		`endpoints[1].lease: 5s is shorter than upstream_timeout 10s; a live worker would be taken over`,
	}, "\n")
	if got := c.Validate().Error(); got != want {
		t.Errorf("Validate() =\n%s\nwant\n%s", got, want)
	}
}

// TestMisspeltMethodIsRefused: an endpoint whose method matches no request
// silently stops coordinating, so check-config must name the mistake.
func TestMisspeltMethodIsRefused(t *testing.T) {
	tests := []struct{ method, want string }{
		{"PSOT", `endpoints[0].method: "PSOT" is not an HTTP method; want one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT, TRACE`},
		{"post", `endpoints[0].method: "post": methods are case-sensitive; write POST`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(strings.Replace(minimal, "method: POST", "method: "+tt.method, 1)))
		if err == nil || err.Error() != tt.want {
			t.Errorf("method %s: Parse error = %v, want %s", tt.method, err, tt.want)
		}
	}
}

// TestValidationErrorsReadInFileOrderWithTheirLines: ByLine puts the
// problems in the order of their lines (a reader's order), problems on no
// line last, and Located adds the line to "path: reason".
func TestValidationErrorsReadInFileOrderWithTheirLines(t *testing.T) {
	ve := &ValidationError{Errors: []FieldError{
		{Path: "defaults.ttl", Reason: "b", Line: 16}, {Path: "store.dsn", Reason: "missing"},
		{Path: "region", Reason: "a", Line: 2}, {Path: "endpoints[0].lease", Reason: "c", Line: 16},
	}}
	var got []string
	for _, fe := range ve.ByLine() {
		got = append(got, fe.Located())
	}
	want := []string{"region: a (line 2)", "defaults.ttl: b (line 16)", "endpoints[0].lease: c (line 16)", "store.dsn: missing"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ByLine, Located:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
