package devstate

import (
	"os"
	"path/filepath"
	"strings"
)

// SweepStale removes what dev clusters that died without stopping (killed,
// crashed) left behind: their state files and temporary data directories.
// Their PostgreSQL servers are stopped and removed by the next throwaway
// PostgreSQL's own sweep (internal/pglocal). It returns the PIDs of the
// clusters swept. Files of running clusters are never touched.
func SweepStale() []int {
	paths, _ := filepath.Glob(filepath.Join(Dir(), "cluster-*.json"))
	var swept []int
	for _, p := range paths {
		st, err := Read(p)
		if err != nil || st.PID <= 0 || Alive(st.PID) {
			continue // being written, or alive
		}
		// Only directories a dev cluster creates: a state file is this
		// user's own, but never trust a path to be removed blindly.
		if st.DataDir != "" && strings.HasPrefix(filepath.Base(st.DataDir), "idemdev") {
			os.RemoveAll(st.DataDir)
		}
		os.Remove(p)
		swept = append(swept, st.PID)
	}
	return swept
}
