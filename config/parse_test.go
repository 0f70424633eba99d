package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/failover/policy"
)

func TestParseDefaults(t *testing.T) {
	c := mustParse(t, minimal)
	if c.Store.MaxConns != DefaultMaxConns || c.Etcd.DialTimeout != DefaultDialTimeout || c.Auth.Leeway != 30*time.Second {
		t.Errorf("store/etcd/auth defaults not filled: %+v %+v %+v", c.Store, c.Etcd, c.Auth)
	}
	want := Endpoint{
		Name: "create-payment", Method: "POST", Path: "/v1/payments", Key: KeyRequired,
		TTL: 24 * time.Hour, Lease: 30 * time.Second, UpstreamTimeout: 10 * time.Second,
		MaxRequestBytes: MiB, MaxResponseBytes: 64 * KiB, Failover: policy.Reject,
	}
	if diff := cmp.Diff(want, c.Endpoints[0]); diff != "" {
		t.Errorf("endpoint defaults (-want +got):\n%s", diff)
	}
}

func TestParseInheritsDefaults(t *testing.T) {
	c := mustParse(t, minimal+`
defaults: {ttl: 1h, lease: 2m, upstream_timeout: 1m}
`)
	e := c.Endpoints[1]
	if e.TTL != time.Hour || e.Lease != 2*time.Minute || e.UpstreamTimeout != time.Minute {
		t.Errorf("endpoint = ttl %s lease %s upstream_timeout %s, want 1h 2m 1m", e.TTL, e.Lease, e.UpstreamTimeout)
	}
}

func TestParseValues(t *testing.T) {
	c := mustParse(t, strings.Replace(minimal, "path: /v1/payments}", `path: /v1/payments,
      ttl: 48h, lease: 1m30s, upstream_timeout: 500ms,
      max_request_bytes: 2MiB, max_response_bytes: 65536}`, 1))
	e := c.Endpoints[0]
	got := []any{e.TTL, e.Lease, e.UpstreamTimeout, e.MaxRequestBytes, e.MaxResponseBytes}
	want := []any{48 * time.Hour, 90 * time.Second, 500 * time.Millisecond, 2 * MiB, 64 * KiB}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// TestParseErrors covers files that are not one YAML document; mistakes
// inside a document are in TestParseReportsYAMLMistakesAsFieldPaths.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		want []string // substrings of the error
	}{
		{"empty", "", []string{"empty document"}},
		{"two documents", minimal + "---\nregion: eu\n", []string{"more than one YAML document"}},
		{"not YAML", "region: [", []string{"yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data))
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseReturnsValidationError(t *testing.T) {
	_, err := Parse([]byte(strings.Replace(minimal, "us-east", "US East", 1)))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Errors) != 1 || ve.Errors[0].Path != "region" {
		t.Fatalf("Parse error = %#v, want a *ValidationError for region", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "idemd.yaml")
	if err := os.WriteFile(path, []byte(minimal), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load(missing) = %v, want an error naming the file", err)
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in      string
		want    ByteSize
		wantErr bool
		str     string
	}{
		{"0", 0, false, "0"},
		{"1000", 1000, false, "1000"},
		{"512B", 512, false, "512"},
		{"64KiB", 64 * KiB, false, "64KiB"},
		{"1 MiB", MiB, false, "1MiB"},
		{"1536KiB", 1536 * KiB, false, "1536KiB"},
		{"2GiB", 2 * GiB, false, "2GiB"},
		{"1MB", 0, true, ""},
		{"1.5MiB", 0, true, ""},
		{"-1", 0, true, ""},
		{"MiB", 0, true, ""},
		{"", 0, true, ""},
		{"9999999999GiB", 0, true, ""},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if !tt.wantErr && got.String() != tt.str {
			t.Errorf("ByteSize(%d).String() = %q, want %q", got, got.String(), tt.str)
		}
	}
}
