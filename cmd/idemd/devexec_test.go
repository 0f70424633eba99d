package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductionIdemdDevRunsTheDevBuild: the production idemd, which does
// not link the dev cluster, answers `idemd dev --help` with the dev
// build's own help (its flags): it built idemd with -tags dev and became
// that program.
func TestProductionIdemdDevRunsTheDevBuild(t *testing.T) {
	out, err := exec.Command(buildIdemd(t), "dev", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--port-base") || !strings.Contains(string(out), "--database-url") {
		t.Fatalf("idemd dev --help: %v\n%s", err, out)
	}
}
