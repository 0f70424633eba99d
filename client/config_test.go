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
		{"regions", client.Config{Regions: []client.Region{{Name: "us-east", URL: "https://us.api.example"}, {URL: "https://eu.api.example/"}}}, ""},
		{"base URL and regions", client.Config{BaseURL: "https://api.example", Regions: []client.Region{{URL: "https://eu.api.example"}}}, "BaseURL"},
		{"region without URL", client.Config{Regions: []client.Region{{Name: "us-east"}}}, "Regions[0].URL"},
		{"region URL with query", client.Config{Regions: []client.Region{{URL: "https://a.example"}, {URL: "https://b.example?x=1"}}}, "Regions[1].URL"},
		{"same URL twice", client.Config{Regions: []client.Region{{URL: "https://a.example"}, {URL: "https://a.example/"}}}, "Regions[1].URL"},
		{"bad region name", client.Config{Regions: []client.Region{{Name: "US East", URL: "https://a.example"}}}, "Regions[0].Name"},
		{"same name twice", client.Config{Regions: []client.Region{{Name: "us", URL: "https://a.example"}, {Name: "us", URL: "https://b.example"}}}, "Regions[1].Name"},
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

// TestParseRegionsReadsTheListIdemdDevPrints: "name=URL" entries and bare
// URLs, comma-separated, in order; a bad entry is named.
func TestParseRegionsReadsTheListIdemdDevPrints(t *testing.T) {
	got, err := client.ParseRegions("us-east=http://127.0.0.1:7101, eu-west=http://127.0.0.1:7102,https://ap.example/v1")
	want := []client.Region{{Name: "us-east", URL: "http://127.0.0.1:7101"}, {Name: "eu-west", URL: "http://127.0.0.1:7102"},
		{URL: "https://ap.example/v1"}}
	if err != nil || len(got) != len(want) {
		t.Fatalf("ParseRegions = %+v, %v; want %+v", got, err, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ParseRegions = %+v; want %+v", got, want)
		}
	}
	for in, field := range map[string]string{"": "entry 0", "a=http://x,,b=http://y": "entry 1",
		"us=ftp://x": "Regions[0].URL", "US=http://x": "Regions[0].Name"} {
		if _, err := client.ParseRegions(in); !errors.Is(err, client.ErrInvalidConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("ParseRegions(%q) = %v; want ErrInvalidConfig naming %s", in, err, field)
		}
	}
}

func TestDefaultConfig(t *testing.T) {
	cfg := client.DefaultConfig()
	cfg.BaseURL = "https://api.example"
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
