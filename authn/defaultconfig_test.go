package authn

import (
	"strings"
	"testing"
)

// TestAuthnDefaultConfigNamesEachMissingField: DefaultConfig carries the
// default leeway and clock, Validate names each required field left
// unset, and it validates once they are set.
func TestAuthnDefaultConfigNamesEachMissingField(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.Leeway != DefaultLeeway || cfg.Clock == nil {
		t.Fatalf("DefaultConfig left a default out: %+v", cfg)
	}
	err := cfg.Validate()
	for _, field := range []string{"issuer", "audience", "hs256_secret"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate = %v, want an error naming %s", err, field)
		}
	}
	cfg.Issuer, cfg.Audience, cfg.HS256Secret = "dev", "idemcoord", []byte(strings.Repeat("k", MinSecretBytes))
	if err := cfg.Validate(); err != nil {
		t.Errorf("DefaultConfig with the required fields: %v", err)
	}
}
