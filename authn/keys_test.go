package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewVerifierKeyFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalECPrivateKey(ecKey)
	if err != nil {
		t.Fatal(err)
	}
	p384File, _ := writePublicPEM(t, dir, "p384.pem", &p384.PublicKey)
	smallFile := write("small.pem", pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&small.PublicKey)}))
	ecFile, _ := writePublicPEM(t, dir, "ec.pem", &ecKey.PublicKey)
	ecDup, _ := writePublicPEM(t, t.TempDir(), "ec.pem", &ecKey.PublicKey)

	tests := []struct {
		name  string
		files []string
		want  string // substring of the error; "" means success
	}{
		{"P-256 ok", []string{ecFile}, ""},
		{"missing file", []string{filepath.Join(dir, "nope.pem")}, "nope.pem"},
		{"not PEM", []string{write("junk.pem", []byte("hello"))}, "junk.pem: no PEM block"},
		{"private key", []string{write("priv.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: privDER}))}, "priv.pem: holds a EC PRIVATE KEY"},
		{"P-384", []string{p384File}, "p384.pem: EC key on curve P-384"},
		{"RSA 1024", []string{smallFile}, "small.pem: RSA key of 1024 bits"},
		{"duplicate kid", []string{ecFile, ecDup}, `kid "ec" is already used`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewVerifier(Config{Issuer: "i", Audience: "a", PublicKeyFiles: tt.files})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("NewVerifier: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("NewVerifier error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{Issuer: "i", Audience: "a", HS256Secret: make([]byte, 32)}
	tests := []struct {
		name string
		edit func(*Config)
		want string // substring of the error; "" means valid
	}{
		{"valid", func(*Config) {}, ""},
		{"no issuer", func(c *Config) { c.Issuer = "" }, "issuer: required"},
		{"no audience", func(c *Config) { c.Audience = "" }, "audience: required"},
		{"no key source", func(c *Config) { c.HS256Secret = nil }, "one of hs256_secret, public_key_files is required"},
		{"short secret", func(c *Config) { c.HS256Secret = make([]byte, 31) }, "hs256_secret: 31 bytes, at least 32"},
		{"negative leeway", func(c *Config) { c.Leeway = -1 }, "leeway: must be within"},
		{"huge leeway", func(c *Config) { c.Leeway = MaxLeeway + 1 }, "leeway: must be within"},
		{"cache off", func(c *Config) { c.CacheMaxAge = -1 }, ""},
		{"cache max age over the cap", func(c *Config) { c.CacheMaxAge = MaxCacheMaxAge + 1 }, "cache_max_age: at most"},
		{"negative cache entries", func(c *Config) { c.CacheEntries = -1 }, "cache_entries: must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
