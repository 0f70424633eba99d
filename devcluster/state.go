package devcluster

import (
	"encoding/hex"
	"os"

	"github.com/idemcoord/idemcoord/devcluster/devstate"
)

// The state file and the dev cluster's names live in devstate, which
// idemctl links without linking a cluster; these are their names here.
type (
	// State is devstate.State.
	State = devstate.State
	// ActorOwner is devstate.ActorOwner.
	ActorOwner = devstate.ActorOwner
)

// ErrNoCluster is devstate.ErrNoCluster.
var ErrNoCluster = devstate.ErrNoCluster

// StateDir is devstate.Dir.
func StateDir() string { return devstate.Dir() }

// StatePath is devstate.Path.
func StatePath(portBase int) string { return devstate.Path(portBase) }

// WriteState is devstate.Write.
func WriteState(path string, st State) error { return devstate.Write(path, st) }

// ReadState is devstate.Read.
func ReadState(path string) (State, error) { return devstate.Read(path) }

// FindState is devstate.Find.
func FindState(portBase int) (State, error) { return devstate.Find(portBase) }

// Running is devstate.Running.
func Running() ([]State, error) { return devstate.Running() }

// SweepStale is devstate.SweepStale.
func SweepStale() []int { return devstate.SweepStale() }

// State returns the cluster's state.
func (c *Cluster) State() State {
	st := State{PortBase: c.portBase, PID: os.Getpid(), Regions: map[string]string{}, Configs: map[string]string{},
		PaymentsURL: c.PaymentsURL, BankURL: c.BankURL, ControlURL: c.ControlURL, EntryURL: c.EntryURL, DSN: c.DSN, Etcd: c.Etcd.Endpoints(),
		DataDir: c.Dir, Secret: hex.EncodeToString(c.secret), Demo: c.Owner("demo"), Store: c.opts.Store, StoreClusters: c.storeState()}
	if c.Postgres != nil {
		st.PostgresDir = c.Postgres.Dir()
	}
	for _, r := range c.Regions {
		st.Regions[r.Name] = r.URL
		st.Configs[r.Name] = r.ConfigPath
	}
	return st
}
