// Package buildinfo reports the module version and VCS commit a binary
// was built from, for the version commands of idemd and idemctl.
package buildinfo

import (
	"fmt"
	"runtime/debug"
)

// Info is what the Go toolchain recorded about a build.
type Info struct {
	// Module is the main module's path.
	Module string `json:"module"`
	// Version is the module version ("(devel)" for a build from a
	// checkout).
	Version string `json:"version"`
	// Commit is the VCS revision, empty when not recorded (go run, tests).
	Commit string `json:"commit"`
	// Time is the commit's time (RFC 3339), when recorded.
	Time string `json:"commit_time,omitempty"`
	// Modified reports uncommitted changes in the build's checkout.
	Modified bool `json:"modified"`
	// GoVersion is the toolchain's version.
	GoVersion string `json:"go_version"`
}

// Read returns the running binary's build information.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	info := Info{Module: bi.Main.Path, Version: bi.Main.Version, GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the one-line form: "idemd v1.2.3 (commit abc123, go1.26.8)".
func (i Info) String() string {
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	}
	if i.Modified {
		commit += "+modified"
	}
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, commit, i.GoVersion)
}
