package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
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
