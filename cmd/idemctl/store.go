package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/internal/patronirest"
)

// storeStatusTimeout bounds asking one cluster's members.
const storeStatusTimeout = 10 * time.Second

// storeClusterView is one Patroni cluster as `idemctl store status`
// prints it.
type storeClusterView struct {
	Cluster string `json:"cluster"`
	// Primary and SyncStandby name the members in those roles (empty:
	// none; with no synchronous standby a strict cluster's writes wait).
	// In quorum commit SyncStandby lists the quorum standbys,
	// comma-separated: a commit waits for any one of them.
	Primary     string `json:"primary"`
	SyncStandby string `json:"sync_standby"`
	// Quorum is true when the cluster runs quorum commit
	// (synchronous_mode: quorum).
	Quorum bool `json:"quorum"`
	// Timeline is the primary's timeline: each failover or switchover
	// starts a new one.
	Timeline int `json:"timeline"`
	// Lag is the synchronous standby's lag behind the primary in bytes
	// (-1 unknown); in quorum commit, the least of the streaming quorum
	// standbys'.
	Lag int64 `json:"sync_lag_bytes"`
	// PrimaryAnswers is true when the primary's own REST API says it is
	// primary (GET /primary 200); a dead primary keeps its leader key, and
	// so its name above, until the key's ttl runs out.
	PrimaryAnswers bool `json:"primary_answers"`
	// Writable is true when the cluster has a primary that answers and a
	// streaming synchronous (or quorum) standby, the state in which it
	// commits.
	Writable bool                       `json:"writable"`
	Members  []patronirest.MemberStatus `json:"members"`
	// Error says why no member's REST API answered.
	Error string `json:"error,omitempty"`
}

// storeTarget is one cluster to ask: its name and members' REST URLs.
type storeTarget struct {
	name string
	rest []string
}

func storeCmd() *cobra.Command {
	store := &cobra.Command{Use: "store", Short: "Inspect the replicated store (PostgreSQL under Patroni)"}
	var (
		format string
		rest   []string
		config string
	)
	status := &cobra.Command{
		Use:   "status",
		Short: "Show each Patroni cluster's primary, synchronous standby, lag and timeline",
		Long: `status asks each store cluster's Patroni REST API (GET /cluster, trying its
members in turn) for its members: which is primary, which are the synchronous
standbys (sync_standby, or quorum_standby in quorum commit, where a commit
waits for any one of them; strict: no write commits without one),
whether the primary itself answers (GET /primary: a dead primary keeps its
leader key, so its name, until the key's ttl runs out), each member's state, replication lag in bytes and timeline (each promotion
starts a new one).

The clusters come from --rest NAME=URL[,URL...] (repeatable: one per cluster,
the members' Patroni REST base URLs), else from --config FILE (a region's
idemd.yaml with store.backend: patroni: each of store.patroni.clusters with its
rest: list), else from the running dev cluster started with
"idemd dev --store ha". A read: it changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			targets, err := storeTargets(rest, config)
			if err != nil {
				return err
			}
			var views []storeClusterView
			for _, tg := range targets {
				views = append(views, readStoreCluster(cmd.Context(), tg))
			}
			return render(cmd.OutOrStdout(), format, storeTable(views))
		},
	}
	status.Flags().StringArrayVar(&rest, "rest", nil,
		"a cluster and its members' Patroni REST URLs, NAME=URL[,URL...] (repeatable; default the running dev cluster's)")
	status.Flags().StringVar(&config, "config", "", "a region's idemd.yaml: its store.patroni.clusters and each one's rest URLs")
	addOutputFlag(status, &format)
	store.AddCommand(status)
	return store
}

// storeTargets returns the clusters to ask: --rest, else --config's, else
// the dev cluster's.
func storeTargets(rest []string, config string) ([]storeTarget, error) {
	if len(rest) > 0 {
		var out []storeTarget
		for _, r := range rest {
			name, urls, ok := strings.Cut(r, "=")
			if !ok || name == "" || urls == "" {
				return nil, fmt.Errorf("--rest %q: want NAME=URL[,URL...], e.g. us-east=http://10.0.0.1:8008,http://10.0.1.1:8008", r)
			}
			out = append(out, storeTarget{name: name, rest: strings.Split(urls, ",")})
		}
		return out, nil
	}
	if config != "" {
		return configStoreTargets(config)
	}
	st, err := devState()
	if err != nil {
		return nil, fmt.Errorf("--rest not set and %w", err)
	}
	if len(st.StoreClusters) == 0 {
		return nil, fmt.Errorf("the dev cluster on port base %d runs one PostgreSQL, not Patroni: start it with `idemd dev --store ha`, or name clusters with --rest", st.PortBase)
	}
	var out []storeTarget
	for _, sc := range st.StoreClusters {
		out = append(out, storeTarget{name: sc.Name, rest: sc.REST})
	}
	return out, nil
}

// readStoreCluster asks one cluster's members for its state.
func readStoreCluster(ctx context.Context, tg storeTarget) storeClusterView {
	ctx, cancel := context.WithTimeout(ctx, storeStatusTimeout)
	defer cancel()
	v := storeClusterView{Cluster: tg.name, Lag: -1}
	ms, err := patronirest.ReadStatus(ctx, tg.rest)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Members = ms
	v.summarize(func(m patronirest.MemberStatus) bool { return patronirest.ProbePrimary(ctx, m.REST) == nil })
	return v
}

// summarize fills the view's primary, synchronous standbys, lag,
// timeline and writability from its Members; answers asks the leader's
// own REST API whether it is primary (GET /primary).
func (v *storeClusterView) summarize(answers func(patronirest.MemberStatus) bool) {
	var syncs []string
	var syncStreaming, primaryRunning bool
	for _, m := range v.Members {
		switch {
		case m.Role == patronirest.RoleLeader:
			v.Primary, v.Timeline = m.Name, m.Timeline
			v.PrimaryAnswers = answers(m)
			primaryRunning = m.State == patronirest.StateRunning && v.PrimaryAnswers
		case patronirest.Synchronous(m.Role):
			syncs = append(syncs, m.Name)
			v.Quorum = m.Role == patronirest.RoleQuorumStandby
			if m.State != patronirest.StateStreaming {
				continue
			}
			// A commit waits for the first standby to flush it (ANY 1 in
			// quorum commit): the least lag is the one commits see.
			if !syncStreaming || v.Lag < 0 || m.Lag >= 0 && m.Lag < v.Lag {
				v.Lag = m.Lag
			}
			syncStreaming = true
		}
	}
	v.SyncStandby = strings.Join(syncs, ",")
	v.Writable = primaryRunning && syncStreaming
}

// storeTable is one row per member, then the JSON of every cluster.
func storeTable(views []storeClusterView) table {
	t := table{header: []string{"CLUSTER", "MEMBER", "REGION", "ROLE", "STATE", "LAG", "TIMELINE", "ADDRESS"}, v: views}
	for _, v := range views {
		if v.Error != "" {
			t.rows = append(t.rows, []string{v.Cluster, "-", "-", "unreachable", v.Error, "-", "-", "-"})
			continue
		}
		for _, m := range v.Members {
			lag := "unknown"
			if m.Lag >= 0 {
				lag = strconv.FormatInt(m.Lag, 10) + " B"
			}
			t.rows = append(t.rows, []string{v.Cluster, m.Name, m.Region, m.Role, m.State, lag, strconv.Itoa(m.Timeline), m.Addr})
		}
		switch {
		case v.Primary != "" && !v.PrimaryAnswers:
			t.rows = append(t.rows, []string{v.Cluster, v.Primary, "-", "NOT WRITABLE", "the leader does not answer /primary (dead or frozen; its key lasts until its ttl): writes wait", "-", "-", "-"})
		case !v.Writable:
			t.rows = append(t.rows, []string{v.Cluster, "-", "-", "NOT WRITABLE", "no running primary with a streaming sync or quorum standby: writes wait", "-", "-", "-"})
		}
	}
	return t
}

// configStoreTargets returns the Patroni clusters of the idemd config at
// path, with their members' REST URLs (store.patroni.clusters[].rest).
func configStoreTargets(path string) ([]storeTarget, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	if b := cfg.Store.Backend; b != config.PatroniStoreBackend {
		if b == "" {
			b = config.DefaultStoreBackend
		}
		return nil, fmt.Errorf("--config %s: store.backend is %q, not %q: its store is one PostgreSQL, not Patroni clusters", path, b, config.PatroniStoreBackend)
	}
	var out []storeTarget
	var missing []string
	for i, cl := range cfg.Store.Patroni.Clusters {
		if len(cl.REST) == 0 {
			missing = append(missing, fmt.Sprintf("store.patroni.clusters[%d].rest (%s)", i, cl.Name))
			continue
		}
		out = append(out, storeTarget{name: cl.Name, rest: cl.REST})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("--config %s: %s empty: list each member's Patroni REST URL there (e.g. rest: [http://10.0.0.1:8008, ...]), or name the clusters with --rest NAME=URL[,URL...]", path, strings.Join(missing, ", "))
	}
	return out, nil
}
