package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/tagbuild"
)

// ModulePath is the module whose cmd/idemd the process cluster builds.
const ModulePath = tagbuild.ModulePath

// drillBuildTimeout bounds `go build -tags drill ./cmd/idemd` on a cold
// build cache (etcd, pgx and otel take about a minute here).
const drillBuildTimeout = 5 * time.Minute

// ErrNoSource is returned (wrapped) when the process cluster must build
// the drill idemd and finds no idemcoord module source to build it from.
var ErrNoSource = tagbuild.ErrNoSource

// drillBuild is the drill idemd as internal/tagbuild builds it: into the
// user's cache directory, one build per source checkout, relinked only
// when the source changed, shared with the e2e tests' drill build
// (testutil.Idemd) and the tagged commands.
var drillBuild = tagbuild.Command{Pkg: "./cmd/idemd", Tag: "drill", What: "the drill build of idemd"}

// built remembers the drill idemd this process already built or found up
// to date, per module source, so a test binary that starts many clusters
// checks the build once.
var built struct {
	mu    sync.Mutex
	paths map[string]string // module dir -> binary
}

// FindSource returns the directory of the idemcoord module that contains
// dir (dir itself or one of its parents), or ErrNoSource.
func FindSource(dir string) (string, error) { return tagbuild.FindSource(dir) }

// DrillIdemd returns the path of an idemd built with -tags drill (crash
// points, the control API, the unsafe modes) from the module at source,
// building it (internal/tagbuild) on first use in this process. The
// binary is built without -race, whatever the caller was built with: the
// drill's processes stay cheap on a small machine.
func DrillIdemd(ctx context.Context, source string) (string, error) {
	return drillIdemd(ctx, source, nil)
}

// drillIdemd is DrillIdemd telling progress, when it builds, every
// buildProgressEvery (buildProgress); a nil progress tells nothing.
func drillIdemd(ctx context.Context, source string, progress io.Writer) (string, error) {
	built.mu.Lock()
	defer built.mu.Unlock()
	if p, ok := built.paths[source]; ok {
		return p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, drillBuildTimeout)
	defer cancel()
	done := buildProgress(progress, clock.Real())
	path, err := drillBuild.BuildFrom(ctx, source)
	done(err == nil)
	if err != nil {
		return "", fmt.Errorf("cluster: %w", err)
	}
	if built.paths == nil {
		built.paths = map[string]string{}
	}
	built.paths[source] = path
	return path, nil
}

// sourceDir checks that dir is the root of an idemcoord module.
func sourceDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if found, err := FindSource(abs); err != nil || found != abs {
		return "", fmt.Errorf("%w: %s is not its directory", ErrNoSource, dir)
	}
	return abs, nil
}

// workingSource is the module at or above the working directory.
func workingSource() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	src, err := FindSource(wd)
	if err != nil {
		return "", fmt.Errorf("cluster: the process cluster builds idemd with -tags drill from the idemcoord module source "+
			"(run from inside a checkout of %s, or pass its directory, or a drill-built idemd): %w", ModulePath, err)
	}
	return src, nil
}
