package failover_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/failover"
)

// TestFailoverDefaultConfigNamesEachMissingFieldAndValidatesOnceSet: the
// defaults are the documented constants, Validate names every required
// field left unset, and a DefaultConfig with them set validates.
func TestFailoverDefaultConfigNamesEachMissingFieldAndValidatesOnceSet(t *testing.T) {
	cfg := failover.DefaultConfig()
	if cfg.ConfirmDelay != failover.DefaultConfirmDelay || cfg.HoldTime != failover.DefaultHoldTime ||
		cfg.StartupGrace != failover.DefaultStartupGrace || cfg.PollInterval != failover.DefaultPollInterval ||
		cfg.ElectionTTL != failover.DefaultElectionTTL || cfg.StuckAfter != failover.DefaultStuckAfter ||
		cfg.MoveConcurrency != failover.DefaultMoveConcurrency || cfg.Clock == nil || cfg.Logger == nil {
		t.Fatalf("DefaultConfig left a default out: %+v", cfg)
	}
	err := cfg.Validate()
	if !errors.Is(err, failover.ErrBadConfig) {
		t.Fatalf("Validate of DefaultConfig without its required fields = %v, want ErrBadConfig", err)
	}
	for _, field := range []string{"Client", "Directory", "Topology", "Audit", "Name"} {
		if !strings.Contains(err.Error(), field+" is required") {
			t.Errorf("Validate does not name %s: %v", field, err)
		}
	}
	cfg.PollInterval = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "PollInterval must not be negative") {
		t.Errorf("negative PollInterval: %v", err)
	}
	e := setup(t)
	cfg = failover.DefaultConfig()
	cfg.Client, cfg.Directory, cfg.Topology, cfg.Audit, cfg.Name = client(t), e.dir, e.topo, e.store, "us-east/i1"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("DefaultConfig with the required fields set: %v", err)
	}
	if _, err := failover.NewController(cfg); err != nil {
		t.Fatalf("NewController(DefaultConfig with the required fields set): %v", err)
	}
}
