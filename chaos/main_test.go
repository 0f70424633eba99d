package chaos_test

import (
	"os"
	"testing"

	"github.com/idemcoord/idemcoord/chaos/cluster"
)

// TestMain removes the drill idemd the process cluster built for this
// test binary.
func TestMain(m *testing.M) {
	code := m.Run()
	cluster.RemoveDrillBuilds()
	os.Exit(code)
}
