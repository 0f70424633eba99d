// Package tagbuild runs the tagged build of the running command. The
// production idemd and idemctl leave out the test rigs (the embedded etcd
// server, the throwaway PostgreSQL, the demo services, toxiproxy and the
// drill harness): `idemd dev` and `idemctl drill` are in the builds made
// with -tags dev and -tags drill. A production binary asked for one of
// them builds that command again with the tag, from the idemcoord module
// source it was built from (or the one at or above the working
// directory), and replaces itself with the result: same arguments, same
// environment, same process id, so signals reach the new program as
// they reached the old one.
package tagbuild

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ModulePath is the module whose commands tagbuild builds.
const ModulePath = "github.com/idemcoord/idemcoord"

// ErrNoSource is returned when no idemcoord module source is found to
// build the tagged command from.
var ErrNoSource = errors.New("no idemcoord module source found (run from inside a checkout of " + ModulePath + ")")

// Command is one tagged build of one of the module's commands.
type Command struct {
	// Pkg is the command's package, relative to the module root
	// ("./cmd/idemd").
	Pkg string
	// Tag is the build tag that adds what this build lacks ("dev"); ""
	// is the production build (for tests, through Build).
	Tag string
	// What names the missing part for the error a binary outside a
	// checkout gives ("idemd dev (the local cluster)").
	What string
}

// Source returns the directory of the idemcoord module this binary was
// built from when it is still there, else the one at or above the
// working directory, else ErrNoSource.
func Source() (string, error) {
	// Without -trimpath the compiler records this file's absolute path:
	// `go run` from a checkout builds from that checkout.
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if dir, err := FindSource(filepath.Dir(file)); err == nil {
			return dir, nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return FindSource(wd)
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

// binDir is where the builds of the module at src are kept between runs,
// so that the next one relinks only what changed: the user's cache
// directory (else the temporary one), one directory per source, so that
// two checkouts never replace each other's binaries.
func binDir(src string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	sum := sha256.Sum256([]byte(src))
	dir := filepath.Join(base, "idemcoord", "bin", hex.EncodeToString(sum[:6]))
	return dir, os.MkdirAll(dir, 0o700)
}

// binName is the file name of c's build.
func (c Command) binName() string {
	if c.Tag == "" {
		return filepath.Base(c.Pkg)
	}
	return filepath.Base(c.Pkg) + "-" + c.Tag
}

// notBuilt wraps why c could not be built in what to do about it.
func (c Command) notBuilt(err error) error {
	return fmt.Errorf("%s is not in this build (the production binary leaves the test rigs out); "+
		"it is built with -tags %s from the module source, and that failed: %w. "+
		"From a checkout: go run -tags %s %s, or go build -tags %s %s",
		c.What, c.Tag, err, c.Tag, c.Pkg, c.Tag, c.Pkg)
}
