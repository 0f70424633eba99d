package devcluster

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// StatePath is where the running dev cluster's State is kept.
func StatePath() string { return filepath.Join(os.TempDir(), "idemcoord-dev", "state.json") }

// State returns the cluster's state.
func (c *Cluster) State() State {
	st := State{Regions: map[string]string{}, PaymentsURL: c.PaymentsURL, BankURL: c.BankURL, DSN: c.DSN,
		Etcd: c.Etcd.Endpoints(), Secret: hex.EncodeToString(c.secret)}
	for _, r := range c.Regions {
		st.Regions[r.Name] = r.URL
	}
	return st
}

// WriteState writes the state file (mode 0600: it holds the secret).
func WriteState(path string, st State) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
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
