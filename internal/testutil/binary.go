package testutil

import (
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/internal/tagbuild"
)

// binaries are the builds this test binary asked for, by package and
// tags, each built (or found up to date) once.
var binaries sync.Map // tagbuild.Command -> *binary

type binary struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of the module's command pkg ("./cmd/idemd")
// built with tags ("" for the production build, "drill", "dev"). Every
// test package shares one build per source checkout, command and tags,
// kept in the user's cache directory and relinked only when the source
// changed (internal/tagbuild), so e2e, the command tests and the chaos
// drills do not each build idemd; a test binary checks it once.
func Binary(t testing.TB, pkg, tags string) string {
	t.Helper()
	c := tagbuild.Command{Pkg: pkg, Tag: tags, What: pkg}
	v, _ := binaries.LoadOrStore(c, new(binary))
	b := v.(*binary)
	b.once.Do(func() { b.path, b.err = c.Build() })
	if b.err != nil {
		t.Fatalf("building %s (tags %q): %v", pkg, tags, b.err)
	}
	return b.path
}

// Idemd returns the path of idemd built with tags (see Binary).
func Idemd(t testing.TB, tags string) string { return Binary(t, "./cmd/idemd", tags) }
