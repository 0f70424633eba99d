package devcluster

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// State is what `idemd dev` leaves on disk for `idemctl dev` while the
// cluster runs: where the regions are and how to sign tokens for them.
type State struct {
	Regions     map[string]string `json:"regions"`
	PaymentsURL string            `json:"payments_url"`
	BankURL     string            `json:"bank_url"`
	DSN         string            `json:"dsn"`
	Etcd        []string          `json:"etcd"`
	// Secret is the hex HS256 secret of this throwaway cluster.
	Secret string `json:"secret"`
}

// StatePath is where the running dev cluster's State is kept: in a
// directory of this user's own (it holds the cluster's secret).
func StatePath() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("idemcoord-dev-%d", os.Getuid()), "state.json")
}

// State returns the cluster's state.
func (c *Cluster) State() State {
	st := State{Regions: map[string]string{}, PaymentsURL: c.PaymentsURL, BankURL: c.BankURL, DSN: c.DSN,
		Etcd: c.Etcd.Endpoints(), Secret: hex.EncodeToString(c.secret)}
	for _, r := range c.Regions {
		st.Regions[r.Name] = r.URL
	}
	return st
}

// WriteState writes the state file (mode 0600: it holds the secret). The
// directory must be this user's and closed to others, and the file is
// written fresh and renamed into place, so a link planted in a shared
// temporary directory is never followed.
func WriteState(path string, st State) error {
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
		return fmt.Errorf("devcluster: %s must be a directory of this user's with mode 0700; remove it and start again", dir)
	}
	return nil
}

// ReadState reads the state file of a running dev cluster.
func ReadState(path string) (State, error) {
	var st State
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("no dev cluster is running (no %s); start one with `go run ./cmd/idemd dev`", path)
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}
