//go:build !drill

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/config"
)

// TestRunRefusesTheDrillEnvironmentWithoutTheTag: `idemd run` built
// without -tags drill stops before opening anything when a drill variable
// is set, and says which one and why.
func TestRunRefusesTheDrillEnvironmentWithoutTheTag(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "idemd.yaml")
	if err := os.WriteFile(cfgFile, []byte(config.Example), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	for _, env := range []string{envDrillControl, envDrillUnsafe} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "127.0.0.1:0")
			_, _, err := runCLI(t, "run", "--config", cfgFile)
			want := env + " is set but this idemd was built without -tags drill"
			if !errors.Is(err, errNotDrillBuild) || err.Error() != want {
				t.Errorf("run with %s set: %v; want %q", env, err, want)
			}
		})
	}
}
