package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
)

// TestDrillRunExitsNonZeroOnViolations runs `idemctl drill run` briefly
// against a coordinator broken on purpose (--unsafe-drill-mode
// region-local-claims): the command fails with the violations, prints
// the seed, the broken invariant and its excerpt on stderr, and still
// writes the JSON summary on stdout.
func TestDrillRunExitsNonZeroOnViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a dev cluster")
	}
	var stdout, stderr bytes.Buffer
	cmd := rootCmd()
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"drill", "run", "--scenario", "region-loss-transfer", "--seed", "1", "--duration", "25s",
		"--unsafe-drill-mode", cluster.UnsafeRegionLocalClaims, "--output", "json"})
	err := cmd.Execute()
	t.Logf("stderr:\n%.3000s", stderr.String())
	if !errors.Is(err, chaos.ErrViolations) {
		t.Fatalf("drill run = %v, want ErrViolations", err)
	}
	if !strings.Contains(stderr.String(), "VIOLATION seed=1 I") || !strings.Contains(stderr.String(), "#") {
		t.Errorf("stderr does not name the seed, the invariant and an excerpt")
	}
	var s drillSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("stdout is not the JSON summary: %v\n%s", err, stdout.String())
	}
	if s.Seed != 1 || s.Safe || s.Requests == 0 || len(s.Violations) == 0 {
		t.Errorf("summary %+v: want seed 1, unsafe, requests and violations", s)
	}
}

// TestDrillRunRefusesAnUnknownScenario checks the scenario before any
// cluster starts.
func TestDrillRunRefusesAnUnknownScenario(t *testing.T) {
	cmd := rootCmd()
	cmd.SetOut(new(bytes.Buffer))
	cmd.SetErr(new(bytes.Buffer))
	cmd.SetArgs([]string{"drill", "run", "--scenario", "no-such-drill"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "no-such-drill") {
		t.Errorf("drill run --scenario no-such-drill = %v, want an error naming it", err)
	}
}

// TestDrillRunNamesWhatItCannotStart: an unknown --cluster or --client,
// and a process cluster with no idemcoord source to build idemd from, fail
// before anything runs, each saying why.
func TestDrillRunNamesWhatItCannotStart(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--cluster", "docker"}, `--cluster must be process or inprocess, got "docker"`},
		{[]string{"--cluster", "process", "--source", t.TempDir()}, "module source"},
		{[]string{"--cluster", "inprocess", "--idemd", "/bin/true"}, "--source and --idemd are for --cluster process"},
		{[]string{"--cluster", "inprocess", "--client", "browser"}, `--client: chaos: invalid client mode: "browser": must be one of direct, sdk, entry`},
	}
	for _, tt := range tests {
		cmd := rootCmd()
		cmd.SetOut(new(bytes.Buffer))
		cmd.SetErr(new(bytes.Buffer))
		cmd.SetArgs(append([]string{"drill", "run", "--scenario", "mixed", "--duration", "1s"}, tt.args...))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("drill run %v = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

// TestDrillRunChecksItsOutputsBeforeStarting: a --report or --history that
// cannot be written is refused before any cluster starts or anything is
// built (the run would otherwise end, minutes later, without its report),
// and a writable path is left as it was.
func TestDrillRunChecksItsOutputsBeforeStarting(t *testing.T) {
	dir := t.TempDir()
	for _, flag := range []string{"--report", "--history"} {
		bad := dir + "/missing/dir/out"
		r := runCtl(t, nil, "drill", "run", "--scenario", "mixed", "--cluster", "inprocess", "--duration", "1s", flag, bad)
		if r.code != 1 || !strings.Contains(r.stderr, flag+" "+bad+": cannot be written") || strings.Contains(r.stderr, "building") {
			t.Errorf("drill run %s %s: exit %d, stderr %q; want a refusal naming the flag before anything runs", flag, bad, r.code, r.stderr)
		}
	}
	if err := checkWritable("--report", dir+"/ok.html"); err != nil {
		t.Errorf("a writable report path refused: %v", err)
	}
	if _, err := os.Stat(dir + "/ok.html"); !os.IsNotExist(err) {
		t.Errorf("checking a path left a file behind: %v", err)
	}
}
