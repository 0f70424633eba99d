package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/idempotency"
)

func TestEndpointPolicy(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	c := mustParse(t, Example)
	got := c.Endpoints[0].Policy()
	want := idempotency.Policy{
		KeyRequired: true,
		TTL:         720 * time.Hour,
		ReplayTTL:   48 * time.Hour,
		Lease:       30 * time.Second,
		Fingerprint: idempotency.FingerprintOptions{
			Exclude:  []string{"/client_timestamp", "/trace_id"},
			MaxBytes: 1 << 20,
		},
		StoreStatuses:    []idempotency.StatusRange{{Lo: 200, Hi: 299}, {Lo: 400, Hi: 499}},
		RetryStatuses:    []idempotency.StatusRange{{Lo: 408, Hi: 408}, {Lo: 425, Hi: 425}, {Lo: 429, Hi: 429}, {Lo: 500, Hi: 500}, {Lo: 502, Hi: 504}},
		ResponseHeaders:  []string{"Content-Type", "Location"},
		MaxRequestBytes:  1 << 20,
		MaxResponseBytes: 64 << 10,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Policy (-want +got):\n%s", diff)
	}

	// An endpoint that sets nothing gets the protocol defaults, except
	// what the file's defaults section says.
	bare := mustParse(t, minimal).Endpoints[0]
	bare.Key = KeyOptional
	bare.ResponseHeaders = []string{"x-request-id"}
	p := bare.Policy()
	d := idempotency.DefaultPolicy()
	d.KeyRequired = false
	d.ResponseHeaders = []string{"X-Request-Id"}
	if diff := cmp.Diff(d, p); diff != "" {
		t.Errorf("default Policy (-want +got):\n%s", diff)
	}
}

func TestAuthConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := "0123456789abcdef0123456789abcdef"
	t.Setenv("GOOD_SECRET", secret)
	t.Setenv("SHORT_SECRET", "short")
	tests := []struct {
		name       string
		auth       Auth
		wantSecret string
		wantPath   string // "" means success
	}{
		{"env", Auth{HS256SecretEnv: "GOOD_SECRET"}, secret, ""},
		{"file with newline", Auth{HS256SecretFile: write("nl", secret+"\n")}, secret, ""},
		{"file with CRLF", Auth{HS256SecretFile: write("crlf", secret+"\r\n")}, secret, ""},
		{"public keys only", Auth{PublicKeyFiles: []string{"/etc/idemd/idp.pem"}}, "", ""},
		{"env unset", Auth{HS256SecretEnv: "NO_SUCH_SECRET_VAR"}, "", "auth.hs256_secret_env"},
		{"env short", Auth{HS256SecretEnv: "SHORT_SECRET"}, "", "auth.hs256_secret_env"},
		{"file missing", Auth{HS256SecretFile: filepath.Join(dir, "nope")}, "", "auth.hs256_secret_file"},
		{"file short", Auth{HS256SecretFile: write("short", "abc\n")}, "", "auth.hs256_secret_file"},
		{"file empty", Auth{HS256SecretFile: write("empty", "\n")}, "", "auth.hs256_secret_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.auth.Issuer, tt.auth.Audience, tt.auth.Leeway = "dev", "idemcoord", 10*time.Second
			c := &Config{Auth: tt.auth}
			got, err := c.AuthConfig()
			if tt.wantPath != "" {
				fes := fieldErrors(t, err)
				if len(fes) != 1 || fes[0].Path != tt.wantPath {
					t.Fatalf("AuthConfig error = %v, want one at %s", err, tt.wantPath)
				}
				if strings.Contains(err.Error(), "short") && tt.auth.HS256SecretEnv == "SHORT_SECRET" {
					t.Errorf("error quotes the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("AuthConfig: %v", err)
			}
			want := authn.Config{Issuer: "dev", Audience: "idemcoord", Leeway: 10 * time.Second, PublicKeyFiles: tt.auth.PublicKeyFiles}
			if tt.wantSecret != "" {
				want.HS256Secret = []byte(tt.wantSecret)
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b func() time.Time) bool { return a == nil && b == nil })); diff != "" {
				t.Errorf("AuthConfig (-want +got):\n%s", diff)
			}
		})
	}
}
