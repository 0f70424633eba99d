package drillcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/chaos"
	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/failpoint"
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
	cmd := rootCmd(t)
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
	cmd := rootCmd(t)
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
		{[]string{"--cluster", "inprocess", "--idemd", "/bin/true"}, "--source, --idemd and --keep-dir are for --cluster process"},
		{[]string{"--cluster", "inprocess", "--keep-dir", t.TempDir()}, "--source, --idemd and --keep-dir are for --cluster process"},
		{[]string{"--cluster", "inprocess", "--client", "browser"}, `--client: chaos: invalid client mode: "browser": must be one of direct, sdk, entry`},
	}
	for _, tt := range tests {
		cmd := rootCmd(t)
		cmd.SetOut(new(bytes.Buffer))
		cmd.SetErr(new(bytes.Buffer))
		cmd.SetArgs(append([]string{"drill", "run", "--scenario", "mixed", "--duration", "1s"}, tt.args...))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("drill run %v = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

// TestDrillRunChecksWritablePaths: a writable --report path passes and
// is left as it was (TestDrillRunChecksItsOutputsBeforeStarting in
// cmd/idemctl has the refusals, through the binary).
func TestDrillRunChecksWritablePaths(t *testing.T) {
	dir := t.TempDir()
	if err := checkWritable("--report", dir+"/ok.html"); err != nil {
		t.Errorf("a writable report path refused: %v", err)
	}
	if _, err := os.Stat(dir + "/ok.html"); !os.IsNotExist(err) {
		t.Errorf("checking a path left a file behind: %v", err)
	}
}

// rootCmd is an idemctl root with the drill command, its --output as
// idemctl's (table or json).
func rootCmd(t *testing.T) *cobra.Command {
	t.Helper()
	root := &cobra.Command{Use: "idemctl", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(Command(Output{
		AddFlag: func(cmd *cobra.Command, format *string) {
			cmd.Flags().StringVarP(format, "output", "o", "table", "output format: table or json")
		},
		Check: func(format string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("--output: must be table or json, got %q", format)
			}
			return nil
		},
		JSON:   "json",
		Render: func(w io.Writer, _ string, v any) error { return json.NewEncoder(w).Encode(v) },
	}))
	return root
}

// TestDrillRunHelpListsEveryFaultKind: `idemctl drill run --help` lists
// each kind of failpoint's registry with its class and description.
func TestDrillRunHelpListsEveryFaultKind(t *testing.T) {
	var out bytes.Buffer
	cmd := rootCmd(t)
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"drill", "run", "--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, d := range failpoint.Defs() {
		if line := fmt.Sprintf("%s (%s): %s", d.Kind, d.Class, d.Doc); !strings.Contains(out.String(), line) {
			t.Errorf("help does not list %q:\n%s", line, out.String())
		}
	}
}

// TestTheReportNamesTheCommandThatReplaysTheRun: the command in the
// report's header is `idemctl drill run` with the flags that decide the
// run (scenario, seed, duration, cluster, client, unsafe mode), not the
// output files, whatever binary ran it.
func TestTheReportNamesTheCommandThatReplaysTheRun(t *testing.T) {
	tests := []struct {
		opts runOptions
		want string
	}{
		{runOptions{name: "mixed", seed: 42, kind: drillProcess, mode: "direct", reportPath: "r.html"},
			"idemctl drill run --scenario mixed --seed 42"},
		{runOptions{name: "region-loss-transfer", seed: 7, duration: 30 * time.Second, kind: drillInProcess, mode: "sdk",
			unsafe: "no-fence"},
			"idemctl drill run --scenario region-loss-transfer --seed 7 --duration 30s --cluster inprocess --client sdk --unsafe-drill-mode no-fence"},
	}
	for _, tt := range tests {
		if got := tt.opts.replayCommand(); got != tt.want {
			t.Errorf("replayCommand() = %q, want %q", got, tt.want)
		}
	}
}
