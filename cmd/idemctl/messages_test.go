package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/store"
)

// TestMessagesSayWhatHappenedInTheCommandsOwnTerms: against a real dev
// cluster and a fresh database, idemctl names an unknown region in the
// verb that was run and prints no table before it; says a move to the
// current owner moved nothing; says whether migrate applied anything;
// suggests the flag meant by a misspelt one; and under -o json prints its
// error as JSON.
func TestMessagesSayWhatHappenedInTheCommandsOwnTerms(t *testing.T) {
	c := devCluster(t)
	conn := []string{"--config", c.Region("eu-west").ConfigPath, "--operator", "oncall", "--reason", "CHG-2"}
	r := runCtl(t, nil, append([]string{"failback", "narnia"}, conn...)...)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, `idemctl: failback: "narnia" is not a region of the topology (us-east, eu-west, ap-south)`) {
		t.Errorf("failback narnia: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	// Shard 1's home is eu-west, the second region.
	r = runCtl(t, nil, append([]string{"move", "--shard", "1", "--to", "eu-west"}, conn...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "shard 1 is already owned by eu-west (epoch 1, ACTIVE): nothing moved") {
		t.Errorf("move to the current owner: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	dsn := pgtest.NewDatabase(t)
	for _, want := range []string{"migrations applied", "already up to date: nothing applied"} {
		if r := runCtl(t, nil, "migrate", "--dsn", dsn); r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("migrate: exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
		}
	}
	r = runCtl(t, nil, "shards", "--ownr", "eu-west")
	if r.code != 1 || !strings.Contains(r.stderr, "unknown flag: --ownr; did you mean --owner?") {
		t.Errorf("misspelt flag: exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCtl(t, nil, "op", "get", "not-a-uuid", "--dsn", dsn, "-o", "json")
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stderr), &e); r.code != 1 || err != nil || !strings.Contains(e.Error, "is not a UUID") {
		t.Errorf("error under -o json: exit %d, stderr %q (%v); want a JSON object with the error", r.code, r.stderr, err)
	}
}

// TestCLIErrorsCarryNoPackagePrefixes: a library error printed by idemctl
// reads in idemctl's words, without "sqlstore: " or "failover: ".
func TestCLIErrorsCarryNoPackagePrefixes(t *testing.T) {
	var b strings.Builder
	printError(&b, nil, fmt.Errorf("no record: %w", store.ErrNotFound))
	if got := b.String(); got != "idemctl: no record: operation not found\n" {
		t.Errorf("printError = %q", got)
	}
}
