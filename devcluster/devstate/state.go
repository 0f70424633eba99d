// Package devstate is the state file a running dev cluster (`idemd dev`)
// leaves for idemctl, and the dev cluster's names and tokens: what
// idemctl needs of a dev cluster without linking one (devcluster links
// the embedded etcd server, a throwaway PostgreSQL and the demo
// services).
package devstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ErrNoCluster is returned by Find when no dev cluster is running.
var ErrNoCluster = errors.New("no dev cluster is running; start one with `go run ./cmd/idemd dev`")

// State is what `idemd dev` leaves on disk for `idemctl` while the cluster
// runs: where the regions are and how to sign tokens for them. Every
// running cluster has its own file (see Path), so two clusters on
// different port bases never overwrite or delete each other's state.
type State struct {
	// PortBase is the cluster's --port-base; it names the state file.
	PortBase int `json:"port_base"`
	// PID is the process running the cluster. A file whose process is
	// gone is stale (a cluster killed without Ctrl-C) and is ignored.
	PID         int               `json:"pid"`
	Regions     map[string]string `json:"regions"`
	PaymentsURL string            `json:"payments_url"`
	BankURL     string            `json:"bank_url"`
	ControlURL  string            `json:"control_url"`
	// EntryURL is the global entry (HAProxy) in front of the regions;
	// empty when haproxy is not installed.
	EntryURL string   `json:"entry_url,omitempty"`
	DSN      string   `json:"dsn"`
	Etcd     []string `json:"etcd"`
	// DataDir holds the cluster's temporary files: the region configs,
	// the secret file; PostgresDir the throwaway PostgreSQL's data and log
	// (empty with --database-url). Both are removed when it stops.
	DataDir     string `json:"data_dir"`
	PostgresDir string `json:"postgres_dir,omitempty"`
	// Store is the store mode, StoreSingle or StoreHA (empty in state
	// files of older clusters: single).
	Store string `json:"store,omitempty"`
	// StoreClusters are the Patroni clusters of a StoreHA cluster, one per
	// home region in Regions order.
	StoreClusters []StoreCluster `json:"store_clusters,omitempty"`
	// Configs maps each region to its idemd.yaml, the same file a user
	// runs with `idemd run --config`.
	Configs map[string]string `json:"configs"`
	// Secret is the hex HS256 secret of this throwaway cluster.
	Secret string `json:"secret"`
	// Demo is where the demo actor ("demo", scope demo/demo) lives when
	// the cluster starts.
	Demo ActorOwner `json:"demo"`
}

// ActorOwner is which region owns an actor's shard, and at what epoch.
type ActorOwner struct {
	Actor string `json:"actor"`
	Shard int    `json:"shard"`
	Owner string `json:"owner"`
	Epoch int64  `json:"epoch"`
	State string `json:"state"`
}

// Dir is the directory of the running dev clusters' state files: a
// directory of this user's own (the files hold the clusters' secrets).
func Dir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("idemcoord-dev-%d", os.Getuid()))
}

// Path is the state file of the dev cluster started with portBase.
func Path(portBase int) string {
	return filepath.Join(Dir(), fmt.Sprintf("cluster-%d.json", portBase))
}

// Write writes the state file (mode 0600: it holds the secret). The
// directory must be this user's and closed to others, and the file is
// written fresh and renamed into place, so a link planted in a shared
// temporary directory is never followed.
func Write(path string, st State) error {
	dir := filepath.Dir(path)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := checkPrivateDir(dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".state-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// checkPrivateDir refuses a directory that is a link, not this user's, or
// open to others.
func checkPrivateDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("devstate: %s must be a directory of this user's with mode 0700; remove it and start again", dir)
	}
	return nil
}

// Read reads one state file.
func Read(path string) (State, error) {
	var st State
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("devstate: %s: %w", path, err)
	}
	return st, nil
}

// Find returns the state of the running dev cluster started with
// portBase, or, with portBase 0, of the only one running. It never guesses:
// with several running and no portBase it fails naming their port bases.
// Files of clusters whose process is gone are ignored.
func Find(portBase int) (State, error) {
	if portBase != 0 {
		st, err := Read(Path(portBase))
		switch {
		case errors.Is(err, fs.ErrNotExist) || (err == nil && !Alive(st.PID)):
			return State{}, fmt.Errorf("no dev cluster with --port-base %d is running%s", portBase, others(portBase))
		case err != nil:
			return State{}, err
		}
		return st, nil
	}
	live, err := Running()
	if err != nil {
		return State{}, err
	}
	switch len(live) {
	case 0:
		return State{}, ErrNoCluster
	case 1:
		return live[0], nil
	}
	return State{}, fmt.Errorf("%d dev clusters are running (--port-base %s); say which with --port-base",
		len(live), portBases(live))
}

// Running returns the state of every running dev cluster, by port base.
func Running() ([]State, error) {
	paths, err := filepath.Glob(filepath.Join(Dir(), "cluster-*.json"))
	if err != nil {
		return nil, err
	}
	var live []State
	for _, p := range paths {
		st, err := Read(p)
		if err != nil || !Alive(st.PID) {
			continue // being written, or left by a killed cluster
		}
		live = append(live, st)
	}
	slices.SortFunc(live, func(a, b State) int { return a.PortBase - b.PortBase })
	return live, nil
}

// others names the running clusters for an error about another one.
func others(portBase int) string {
	live, _ := Running()
	if len(live) == 0 {
		return ""
	}
	return fmt.Sprintf(" (running: --port-base %s)", portBases(live))
}

// portBases lists the clusters' port bases.
func portBases(sts []State) string {
	s := make([]string, len(sts))
	for i, st := range sts {
		s[i] = strconv.Itoa(st.PortBase)
	}
	return strings.Join(s, ", ")
}

// Alive reports whether process pid exists.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
