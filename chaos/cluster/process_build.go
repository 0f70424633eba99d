package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

// ModulePath is the module whose cmd/idemd the process cluster builds.
const ModulePath = "github.com/idemcoord/idemcoord"

// drillBuildTimeout bounds `go build -tags drill ./cmd/idemd` on a cold
// build cache (etcd, pgx and otel take about a minute here).
const drillBuildTimeout = 5 * time.Minute

// ErrNoSource is returned when the process cluster must build the drill
// idemd and finds no idemcoord module source to build it from.
var ErrNoSource = errors.New("cluster: the process cluster builds idemd with -tags drill from the idemcoord module source, " +
	"which was not found (run from inside a checkout of " + ModulePath + ", or pass its directory, or a drill-built idemd)")

// builds holds the drill idemd binaries this process built, one per
// module source, in one temporary directory: each is built once per test
// binary or drill run, and RemoveDrillBuilds deletes them.
var builds struct {
	mu    sync.Mutex
	dir   string
	paths map[string]string // module dir -> binary
}

// FindSource returns the directory of the idemcoord module that contains
// dir (dir itself or one of its parents), or ErrNoSource.
func FindSource(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if modulePath(filepath.Join(dir, "go.mod")) == ModulePath {
			if _, err := os.Stat(filepath.Join(dir, "cmd", "idemd")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoSource
		}
		dir = parent
	}
}

// modulePath returns the module path a go.mod declares, "" if none.
func modulePath(gomod string) string {
	f, err := os.Open(gomod)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// DrillIdemd returns the path of an idemd built with -tags drill (crash
// points, the control API, the unsafe modes) from the module at source,
// building it on first use in this process. The binary is built without
// -race, whatever the caller was built with: the drill's processes stay
// cheap on a small machine.
func DrillIdemd(ctx context.Context, source string) (string, error) {
	return drillIdemd(ctx, source, nil)
}

// drillIdemd is DrillIdemd telling progress, when it builds, every
// buildProgressEvery (buildProgress); a nil progress tells nothing.
func drillIdemd(ctx context.Context, source string, progress io.Writer) (string, error) {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if p, ok := builds.paths[source]; ok {
		return p, nil
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "idemcoord-drill-bin")
		if err != nil {
			return "", err
		}
		builds.dir, builds.paths = dir, map[string]string{}
	}
	path := filepath.Join(builds.dir, fmt.Sprintf("idemd-%d", len(builds.paths)))
	ctx, cancel := context.WithTimeout(ctx, drillBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "drill", "-o", path, "./cmd/idemd")
	cmd.Dir = source
	done := buildProgress(progress, clock.Real())
	out, err := cmd.CombinedOutput()
	done(err == nil)
	if err != nil {
		return "", fmt.Errorf("cluster: go build -tags drill ./cmd/idemd in %s: %w\n%s", source, err, out)
	}
	builds.paths[source] = path
	return path, nil
}

// RemoveDrillBuilds deletes the binaries DrillIdemd built. A test
// binary's TestMain and `idemctl drill run` call it once they are done.
func RemoveDrillBuilds() {
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		os.RemoveAll(builds.dir)
	}
	builds.dir, builds.paths = "", nil
}
