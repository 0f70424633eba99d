package tagbuild

import (
	"errors"
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
