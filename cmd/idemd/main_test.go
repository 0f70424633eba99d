package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/cmd/idemd/internal/devcmd"
	"github.com/idemcoord/idemcoord/config"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// The dev build's tree: the production build's dev execs another
	// program (TestProductionIdemdDevRunsTheDevBuild runs that one).
	cmd := newRoot(devcmd.Command(newLogger))
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errb.String(), err
}

func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte(config.Example), 0o600)
	t.Setenv("IDEMD_HS256_SECRET", strings.Repeat("s", 32))
	out, _, err := runCLI(t, "check-config", good)
	if err != nil || !strings.Contains(out, "ok (region us-east, 4 endpoints)") {
		t.Fatalf("valid example: out %q err %v", out, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	broken := strings.Replace(config.Example, "failover: reject", "failover: maybe", 1)
	broken = strings.Replace(broken, "    lease: 30s\n    upstream_timeout: 10s", "    lease: 5s\n    upstream_timeout: 10s", 1)
	os.WriteFile(bad, []byte(broken), 0o600)
	_, stderr, err := runCLI(t, "check-config", bad)
	if err == nil {
		t.Fatal("invalid config accepted")
	}
	for _, want := range []string{"endpoints[0].failover:", "endpoints[0].lease:"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"check-config", "--help"}, {"dev", "--help"}} {
		out, _, err := runCLI(t, args...)
		if err != nil || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: err %v, output %q", args, err, out)
		}
	}
}

func TestVersionPrintsModuleVersionAndCommit(t *testing.T) {
	out, _, err := runCLI(t, "version")
	if err != nil || !strings.HasPrefix(out, "idemd ") || !strings.Contains(out, "(commit ") {
		t.Fatalf("idemd version: %q %v", out, err)
	}
}

// TestMisspeltFlagGetsTheMeantOne checks that idemd, like idemctl, answers
// a misspelt flag with the flag probably meant and where to read the rest,
// on each command, and points at --help when nothing is close.
func TestMisspeltFlagGetsTheMeantOne(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"dev", "--port-bse", "7401"}, "unknown flag: --port-bse; did you mean --port-base? (see idemd dev --help)"},
		{[]string{"dev", "--database", "postgres://x"}, "unknown flag: --database; did you mean --database-url? (see idemd dev --help)"},
		{[]string{"run", "--confg", "x.yaml"}, "unknown flag: --confg; did you mean --config? (see idemd run --help)"},
		{[]string{"run", "--zzzzzzzz"}, "unknown flag: --zzzzzzzz (see idemd run --help)"},
	}
	for _, tt := range tests {
		_, _, err := runCLI(t, tt.args...)
		if err == nil || err.Error() != tt.want {
			t.Errorf("idemd %s: err %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
}
