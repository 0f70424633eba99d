package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/config"
)

// TestCheckConfigListsErrorsInFileOrderAndSuggestsHoursForATTL: idemd
// check-config prints its problems in the order of their lines, each with
// its field path and line, and a bare "ttl: 24" is answered with 24h, the
// unit a retention is written in.
func TestCheckConfigListsErrorsInFileOrderAndSuggestsHoursForATTL(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	// The ttl's mistake (line 87) is found by decoding, before validation
	// finds the region's (line 8): printed in file order all the same.
	bad := strings.Replace(config.Example, "region: us-east", "region: US East", 1)
	bad = strings.Replace(bad, "failover: reject", "failover: maybe", 1)
	bad = strings.Replace(bad, "  ttl: 24h ", "  ttl: 24  ", 1)
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runCLI(t, "check-config", path)
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var paths []string
	for _, l := range lines {
		p, _, _ := strings.Cut(l, ":")
		paths = append(paths, p)
	}
	if got, want := strings.Join(paths, " "), "region defaults.ttl endpoints[0].failover"; got != want {
		t.Errorf("fields in the order printed: %s, want %s (file order)\n%s", got, want, stderr)
	}
	if !strings.Contains(stderr, `defaults.ttl: "24" has no unit; write a duration such as 24h (hours)`) ||
		!strings.Contains(stderr, "(line 8)") {
		t.Errorf("stderr lacks the 24h suggestion or the region's line:\n%s", stderr)
	}
}

// TestRunRefusesAMissingSecretBeforeConnecting: idemd run with the HS256
// secret's variable unset fails at once naming the variable, without
// trying the store or etcd (the example's addresses answer nothing here).
func TestRunRefusesAMissingSecretBeforeConnecting(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", "")
	os.Unsetenv("IDEMD_HS256_SECRET")
	path := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(path, []byte(config.Example), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := runCLI(t, "run", "--config", path)
	if err == nil || !strings.Contains(err.Error(), "IDEMD_HS256_SECRET") {
		t.Fatalf("run without the secret: %v; want an error naming IDEMD_HS256_SECRET", err)
	}
	for _, part := range []string{"store", "etcd", "connect", "26257", "2379"} {
		if strings.Contains(err.Error(), part) {
			t.Errorf("run without the secret: %v; it tried to connect first (mentions %q)", err, part)
		}
	}
}
