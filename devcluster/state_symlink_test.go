package devcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// StatePath is a fixed name in the shared temporary directory, and
// WriteState writes through whatever is there: another local user who
// creates /tmp/idemcoord-dev first (world-writable) and plants
// state.json as a symlink makes `idemd dev` overwrite any file the
// developer can write with the cluster's secret and DSN, and can read or
// swap the state idemctl trusts. The file must be created fresh, without
// following links, in a directory only this user controls.
func TestWriteStateDoesNotFollowAPlantedSymlink(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := StateDir()
	if err := os.Mkdir(dir, 0o777); err != nil { // planted by another user
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	if err := os.Symlink(victim, StatePath(DefaultPortBase)); err != nil {
		t.Fatal(err)
	}
	err := WriteState(StatePath(DefaultPortBase), State{Secret: strings.Repeat("ab", 32), DSN: "postgres://x"})
	got, _ := os.ReadFile(victim)
	if string(got) != "precious\n" {
		t.Fatalf("WriteState (err %v) followed the planted symlink and overwrote %s with:\n%s", err, victim, got)
	}
}
