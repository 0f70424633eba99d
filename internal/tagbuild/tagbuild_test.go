package tagbuild

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutsideACheckoutSaysWhatToRun: away from any idemcoord checkout
// there is no source to build the tagged command from, and the error says
// what is missing and the command to run from a checkout.
func TestOutsideACheckoutSaysWhatToRun(t *testing.T) {
	_, err := FindSource(t.TempDir())
	if !errors.Is(err, ErrNoSource) {
		t.Fatalf("FindSource(empty dir) = %v, want ErrNoSource", err)
	}
	msg := Command{Pkg: "./cmd/idemd", Tag: "dev", What: "idemd dev (the local three-region cluster)"}.notBuilt(err).Error()
	for _, want := range []string{"idemd dev (the local three-region cluster) is not in this build",
		"no idemcoord module source found", "go run -tags dev ./cmd/idemd"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if src, err := FindSource("."); err != nil || modulePath(src+"/go.mod") != ModulePath {
		t.Errorf("FindSource(inside the checkout) = %q, %v", src, err)
	}
}

// TestBuildFromAFailingBuildReturnsTheCompilersOutput: a drill run
// building from a checkout (`--source DIR`) shows nothing while it
// builds, so a failed build's error carries what go build said.
func TestBuildFromAFailingBuildReturnsTheCompilersOutput(t *testing.T) {
	src, err := FindSource(".")
	if err != nil {
		t.Fatal(err)
	}
	c := Command{Pkg: "./cmd/no-such-command", Tag: "drill"}
	if dir, err := binDir(src); err == nil {
		t.Cleanup(func() { os.Remove(filepath.Join(dir, c.binName()+".lock")) })
	}
	_, err = c.BuildFrom(context.Background(), src)
	if err == nil || !strings.Contains(err.Error(), "go build -tags drill ./cmd/no-such-command") ||
		!strings.Contains(err.Error(), "no-such-command") || strings.Count(err.Error(), "\n") == 0 {
		t.Errorf("BuildFrom(a missing package) = %v, want the command and the compiler's output", err)
	}
}
