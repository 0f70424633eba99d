package main

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestDrillRunChecksItsOutputsBeforeStarting: a --report or --history that
// cannot be written is refused before any cluster starts or anything is
// built (the run would otherwise end, minutes later, without its report),
// through the production binary, which execs the drill build
// (a writable path: drillcmd's TestDrillRunChecksWritablePaths).
func TestDrillRunChecksItsOutputsBeforeStarting(t *testing.T) {
	// The build the production binary execs, made up front (shared with
	// its exec: internal/tagbuild), so the runs below are bounded by their
	// own timeout, not by a cold compile.
	testutil.Binary(t, "./cmd/idemctl", "drill")
	dir := t.TempDir()
	for _, flag := range []string{"--report", "--history"} {
		bad := dir + "/missing/dir/out"
		r := runCtl(t, nil, "drill", "run", "--scenario", "mixed", "--cluster", "inprocess", "--duration", "1s", flag, bad)
		if r.code != 1 || !strings.Contains(r.stderr, flag+" "+bad+": cannot be written") || strings.Contains(r.stderr, "building idemd") {
			t.Errorf("drill run %s %s: exit %d, stderr %q; want a refusal naming the flag before anything runs", flag, bad, r.code, r.stderr)
		}
	}
}
