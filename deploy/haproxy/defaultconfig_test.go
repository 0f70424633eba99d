package haproxy

import (
	"strings"
	"testing"
)

// TestHAProxyDefaultConfigNamesEachMissingField: DefaultConfig carries the
// Default constants, Validate names Listen and then Regions when unset,
// and it validates once they are set.
func TestHAProxyDefaultConfigNamesEachMissingField(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.ConnectTimeout != DefaultConnectTimeout || cfg.ServerTimeout != DefaultServerTimeout ||
		cfg.ClientTimeout != DefaultClientTimeout || cfg.CheckInterval != DefaultCheckInterval ||
		cfg.MaxConn != DefaultMaxConn {
		t.Fatalf("DefaultConfig left a default out: %+v", cfg)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Listen") {
		t.Errorf("Validate without Listen = %v, want an error naming Listen", err)
	}
	cfg.Listen = "127.0.0.1:0"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "Regions") {
		t.Errorf("Validate without Regions = %v, want an error naming Regions", err)
	}
	cfg.Regions = []Region{{Name: "us-east", Addr: "127.0.0.1:8080"}}
	if err := cfg.Validate(); err != nil {
		t.Errorf("DefaultConfig with Listen and Regions: %v", err)
	}
}
