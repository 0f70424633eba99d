package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/config"
)

func TestProductionSectionsDefaults(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	c, err := config.Parse([]byte(strings.Replace(config.Example, "drain_timeout: 30s\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if c.DrainTimeout != config.DefaultDrainTimeout || c.Cleanup.Interval != time.Minute ||
		c.Cleanup.BatchSize != config.DefaultCleanupBatchSize || c.TLS.Enabled() || c.Etcd.TLS.Enabled() {
		t.Errorf("defaults: drain %v, cleanup %+v, tls %+v, etcd tls %+v", c.DrainTimeout, c.Cleanup, c.TLS, c.Etcd.TLS)
	}
}

func TestProductionSectionsValidation(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	for _, tt := range []struct {
		name, old, new, path string
	}{
		{"negative drain", "drain_timeout: 30s", "drain_timeout: -1s", "drain_timeout"},
		{"drain too long", "drain_timeout: 30s", "drain_timeout: 11m", "drain_timeout"},
		{"listener cert without key", "# tls: {cert_file: /etc/idemd/tls/tls.crt, key_file: /etc/idemd/tls/tls.key}",
			"tls: {cert_file: /etc/idemd/tls/tls.crt}", "tls"},
		{"upstream CA and skip-verify", "# upstream_tls: {ca_file: /etc/idemd/upstream-ca.crt}",
			"upstream_tls: {ca_file: /x.crt, insecure_skip_verify: true}", "upstream_tls.insecure_skip_verify"},
		{"etcd key without cert", "  # tls: {ca_file: /etc/idemd/etcd/ca.crt,", "  tls: {key_file: /k} #", "etcd.tls"},
		{"cleanup batch too large", "batch_size: 500", "batch_size: 20000", "cleanup.batch_size"},
		{"negative cleanup interval", "interval: 1m", "interval: -1m", "cleanup.interval"},
		{"unknown cleanup field", "batch_size: 500", "batch_size: 500\n  every: 1m", "cleanup.every"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(config.Example, tt.old) {
				t.Fatalf("example lacks %q", tt.old)
			}
			_, err := config.Parse([]byte(strings.Replace(config.Example, tt.old, tt.new, 1)))
			var verr *config.ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("Parse: %v, want a *ValidationError", err)
			}
			var paths []string
			for _, fe := range verr.Errors {
				paths = append(paths, fe.Path)
			}
			if len(paths) != 1 || paths[0] != tt.path {
				t.Errorf("errors at %v, want exactly %s", paths, tt.path)
			}
		})
	}
}
