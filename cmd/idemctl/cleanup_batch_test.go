package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if ctlBin.dir != "" {
		os.RemoveAll(ctlBin.dir)
	}
	os.Exit(code)
}

// `idemctl op cleanup --batch 0` (or a negative batch) must end, refused
// naming the flag: the loop's stop condition n < batch would never be
// true, so the command would delete nothing forever, until killed.
func TestCleanupWithZeroBatchIsRefused(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	if _, err := idemctl(t, "migrate", "--dsn", dsn); err != nil {
		t.Fatal(err)
	}
	for _, batch := range []string{"0", "-1"} {
		t.Run("batch "+batch, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := rootCmd()
			var out, errb bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cmd.SetArgs([]string{"op", "cleanup", "--dsn", dsn, "--batch", batch, "--reason", "test"})
			done := make(chan error, 1)
			go func() { done <- cmd.ExecuteContext(ctx) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "--batch: must be within 1 and") {
					t.Fatalf("op cleanup --batch %s: %v (output %q), want a refusal naming --batch", batch, err, out.String())
				}
			case <-time.After(20 * time.Second):
				// Left running: the loop ignores even the cancelled
				// context (Cleanup turns its ambiguous-commit error into
				// 0, nil). The test binary's exit ends it.
				t.Fatalf("op cleanup --batch %s on an empty store still running after 20s, 10s after its context ended", batch)
			}
		})
	}
}
