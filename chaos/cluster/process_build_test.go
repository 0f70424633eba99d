package cluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestFindSourceFindsTheModuleAboveADirectoryOrSaysItIsMissing: the
// process cluster builds idemd from the idemcoord module around the
// working directory (a test's package directory, a checkout's subfolder),
// and a directory outside any checkout is ErrNoSource, not a build error.
func TestFindSourceFindsTheModuleAboveADirectoryOrSaysItIsMissing(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(filepath.Dir(wd)) // chaos/cluster -> the module
	got, err := FindSource(wd)
	if err != nil || got != root {
		t.Errorf("FindSource(%s) = %q, %v; want %s", wd, got, err, root)
	}
	if got, err := FindSource(t.TempDir()); !errors.Is(err, ErrNoSource) {
		t.Errorf("FindSource(a temporary directory) = %q, %v; want ErrNoSource", got, err)
	}
}

// TestTheProcessClusterUsesTheSharedDrillBuild: the process cluster's
// idemd is internal/tagbuild's drill build of the checkout, the very file
// the e2e tests and the tagged commands use (relinked only when the source
// changed), not a build of its own; --source names a checkout's root or
// is refused.
func TestTheProcessClusterUsesTheSharedDrillBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds idemd with -tags drill (cached)")
	}
	ctx := context.Background()
	shared := testutil.Idemd(t, "drill")
	got, err := drillBinary(ctx, ProcessConfig{})
	if err != nil || got != shared {
		t.Errorf("drill idemd = %q, %v; want the shared build %s", got, err, shared)
	}
	root := filepath.Dir(filepath.Dir(must(os.Getwd())))
	if got, err := drillBinary(ctx, ProcessConfig{Source: root}); err != nil || got != shared {
		t.Errorf("drill idemd from --source %s = %q, %v; want %s", root, got, err, shared)
	}
	if got, err := drillBinary(ctx, ProcessConfig{Binary: "/some/idemd"}); err != nil || got != "/some/idemd" {
		t.Errorf("drill idemd with --idemd = %q, %v; want it as given", got, err)
	}
	for _, dir := range []string{t.TempDir(), filepath.Join(root, "chaos")} {
		if _, err := drillBinary(ctx, ProcessConfig{Source: dir}); !errors.Is(err, ErrNoSource) {
			t.Errorf("--source %s = %v, want ErrNoSource", dir, err)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
