package report

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/internal/buildinfo"
)

// definitions names where the invariants are defined in full: the
// report links nothing outside itself (it is opened from disk, offline).
const definitions = "docs/architecture.md, section Invariants"

// Meta is what identifies a run besides its scenario and seed.
type Meta struct {
	// Generated is when the report was built.
	Generated time.Time
	// Command is the command that replays the run, to paste
	// (`idemctl drill run --scenario ... --seed ...`); by default the
	// command line of the process, which under `go run` is a build
	// cache path.
	Command string
	// Version is the module version and commit of that process.
	Version string
	// Commit is the commit of the source the drill ran ("+modified" with
	// uncommitted changes), when known.
	Commit string
	// Cluster is the kind of cluster drilled (idemctl drill run
	// --cluster): process or inprocess; empty when not said.
	Cluster string
	// Span is the run's length, from its first call to its last return.
	Span time.Duration
}

// meta returns the report's metadata for a history spanning span.
func meta(span time.Duration) Meta {
	info := buildinfo.Read()
	commit := info.Commit
	if commit != "" && info.Modified {
		commit += "+modified"
	}
	return Meta{Generated: time.Now().UTC(), Command: strings.Join(os.Args, " "), Version: info.String(),
		Commit: commit, Span: span}
}

// ClusterKind says in words what Cluster names.
func (m Meta) ClusterKind() string {
	switch m.Cluster {
	case "process":
		return "process: one idemd process per region, a 3-member etcd, every link through a toxiproxy"
	case "inprocess":
		return "inprocess: the regions in the drill's own process (no pauses, etcd or peer link cuts, crash points or skew)"
	case "":
		return "not recorded"
	}
	return m.Cluster
}

// units says what each invariant's "checked" count counts.
var units = map[validate.Invariant]string{
	validate.I1: "keys", validate.I2: "keys", validate.I5: "keys", validate.I7: "keys", validate.Register: "keys",
	validate.I3: "records", validate.I4: "shards", validate.I6: "shards", validate.I8: "shards",
	validate.Liveness: "shards and records",
}

// ErrorClass is one class of failed attempts and its count.
type ErrorClass struct {
	Class string
	N     int
}

// ErrorClasses returns the error counts by class, largest first.
func (r Report) ErrorClasses() []ErrorClass {
	out := make([]ErrorClass, 0, len(r.Errors))
	for c, n := range r.Errors {
		out = append(out, ErrorClass{c, n})
	}
	slices.SortFunc(out, func(a, b ErrorClass) int {
		if a.N != b.N {
			return b.N - a.N
		}
		return strings.Compare(a.Class, b.Class)
	})
	return out
}

// round shows a duration with three significant digits at most: 12.3ms,
// 1.24s, 845µs.
func round(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < 100*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// faultLabel is the label of fault window i, in the chart and the table.
func faultLabel(i int) string { return fmt.Sprintf("F%d", i+1) }
