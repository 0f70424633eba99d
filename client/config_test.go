package client_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/client"
)

func TestConfigValidate(t *testing.T) {
	source := func(context.Context) (string, error) { return "t", nil }
	tests := []struct {
		name      string
		cfg       client.Config
		wantField string // "" means valid
	}{
		{"defaults", client.Config{BaseURL: "https://api.example"}, ""},
		{"path prefix", client.Config{BaseURL: "http://127.0.0.1:8080/v2/"}, ""},
		{"everything set", client.Config{BaseURL: "https://api.example", TokenSource: source, MaxAttempts: 1, BaseDelay: time.Second, MaxDelay: time.Second}, ""},
		{"base delay above the default max", client.Config{BaseURL: "https://api.example", BaseDelay: 10 * time.Second}, ""},
		{"no base URL", client.Config{}, "BaseURL"},
		{"relative base URL", client.Config{BaseURL: "/v1"}, "BaseURL"},
		{"ftp base URL", client.Config{BaseURL: "ftp://api.example"}, "BaseURL"},
		{"base URL with query", client.Config{BaseURL: "https://api.example?x=1"}, "BaseURL"},
		{"token and source", client.Config{BaseURL: "https://api.example", Token: "t", TokenSource: source}, "Token"},
		{"token with newline", client.Config{BaseURL: "https://api.example", Token: "t\r\nX-Evil: 1"}, "Token"},
		{"negative attempts", client.Config{BaseURL: "https://api.example", MaxAttempts: -1}, "MaxAttempts"},
		{"negative base delay", client.Config{BaseURL: "https://api.example", BaseDelay: -time.Second}, "BaseDelay"},
		{"max below base", client.Config{BaseURL: "https://api.example", BaseDelay: time.Second, MaxDelay: time.Millisecond}, "MaxDelay"},
		{"max over the wait cap", client.Config{BaseURL: "https://api.example", MaxDelay: 2 * time.Minute}, "MaxDelay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Errorf("Validate = %v; want nil", err)
				}
				return
			}
			if !errors.Is(err, client.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantField+":") {
				t.Errorf("Validate = %v; want ErrInvalidConfig naming %s", err, tt.wantField)
			}
			if strings.Contains(tt.cfg.Token, "\n") && strings.Contains(err.Error(), tt.cfg.Token) {
				t.Errorf("Validate error %q reveals the token", err)
			}
			if _, nerr := client.New(tt.cfg); !errors.Is(nerr, client.ErrInvalidConfig) {
				t.Errorf("New = %v; want ErrInvalidConfig", nerr)
			}
		})
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg := client.DefaultConfig("https://api.example")
	if cfg.MaxAttempts != client.DefaultMaxAttempts || cfg.BaseDelay != client.DefaultBaseDelay ||
		cfg.MaxDelay != client.DefaultMaxDelay || cfg.Clock == nil || cfg.Logger == nil ||
		cfg.HTTPClient == nil || cfg.HTTPClient.Timeout != client.DefaultTimeout {
		t.Errorf("DefaultConfig left a default out: %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("DefaultConfig does not validate: %v", err)
	}
}

func TestNewKey(t *testing.T) {
	shape := regexp.MustCompile(`^[A-Za-z0-9_-]{32}$`)
	seen := make(map[string]bool)
	for range 1000 {
		k := client.NewKey()
		if !shape.MatchString(k) {
			t.Fatalf("NewKey() = %q; want 32 base64url characters", k)
		}
		if seen[k] {
			t.Fatalf("NewKey() repeated %q", k)
		}
		seen[k] = true
	}
}
