//go:build unix

package tagbuild

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Exec builds c (go build -tags c.Tag, relinked only when the source
// changed since the last build) and replaces this process with it, with
// os.Args and the environment unchanged. It returns only on failure.
func (c Command) Exec() error {
	path, unlock, err := c.build()
	if err != nil {
		return c.notBuilt(err)
	}
	// The build lock is held until the exec closes it (O_CLOEXEC): no
	// other start replaces the file between the build and the exec.
	err = syscall.Exec(path, append([]string{os.Args[0]}, os.Args[1:]...), os.Environ())
	unlock()
	return fmt.Errorf("exec %s: %w", path, err)
}

// Build builds c into the build directory and returns its path. Tests
// use it; a command calls Exec.
func (c Command) Build() (string, error) {
	path, unlock, err := c.build()
	if err != nil {
		return "", c.notBuilt(err)
	}
	unlock()
	return path, nil
}

// BuildFrom builds c from the idemcoord module at src (a checkout the
// caller chose: `idemctl drill run --source DIR`) into that source's
// build directory, relinked only when the source changed, and returns the
// binary's path: the same file Build and Exec use for that source, so a
// drill, the e2e tests and the tagged commands share one build. It
// announces nothing; the compiler's output is in the error.
func (c Command) BuildFrom(ctx context.Context, src string) (string, error) {
	var out bytes.Buffer
	path, unlock, err := c.buildIn(ctx, src, &out, false)
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, out.Bytes())
	}
	unlock()
	return path, nil
}

// slowBuild is how long a build runs before it says so: an up-to-date
// build only checks, a cold one compiles etcd, pgx and otel.
const slowBuild = 2 * time.Second

// build builds c from Source, announcing a slow build and showing the
// compiler's output on stderr.
func (c Command) build() (path string, unlock func(), err error) {
	src, err := Source()
	if err != nil {
		return "", nil, err
	}
	return c.buildIn(context.Background(), src, os.Stderr, true)
}

// buildIn runs go build in src under an exclusive lock on the build
// directory, so that two starts at once do not write one file together,
// and returns the binary's path and the lock's release. The compiler's
// output goes to out; announce says on stderr when the build is slow.
func (c Command) buildIn(ctx context.Context, src string, out io.Writer, announce bool) (path string, unlock func(), err error) {
	dir, err := binDir(src)
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, c.binName())
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", c.Tag, "-o", path, c.Pkg) // -tags "": none
	cmd.Dir = src
	cmd.Stdout, cmd.Stderr = out, out // compiler errors, for whoever changed the source
	slow := time.AfterFunc(slowBuild, func() {
		if announce {
			fmt.Fprintf(os.Stderr, "building %s (go build -tags %q; about a minute on a cold build cache)...\n", c.Pkg, c.Tag)
		}
	})
	err = cmd.Run()
	slow.Stop()
	if err != nil {
		lock.Close()
		return "", nil, fmt.Errorf("go build -tags %s %s in %s: %w", c.Tag, c.Pkg, src, err)
	}
	return path, func() { lock.Close() }, nil
}
