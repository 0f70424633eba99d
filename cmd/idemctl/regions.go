package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
)

// regionView is one region as `idemctl regions` prints it.
type regionView struct {
	Region string `json:"region"`
	URL    string `json:"url"`
	// State is the failover controller's state of the region: healthy,
	// suspect, failed or recovering.
	State failover.RegionState `json:"state"`
	// Since is when it entered State, and For how long ago that was.
	Since *time.Time `json:"since,omitempty"`
	For   string     `json:"for,omitempty"`
	// Health is "up" with a live instance now, else "down".
	Health    string         `json:"health"`
	Instances []instanceView `json:"instances"`
	// Shards counts the shards the region owns, by state.
	Shards map[string]int `json:"shards"`
	// Home is how many shards have this region as home.
	Home int `json:"home_shards"`
	// HomeElsewhere counts, by owner, the home shards another region owns
	// or that are not ACTIVE: what a failback of this region would move.
	HomeElsewhere map[string]int `json:"home_shards_elsewhere,omitempty"`
}

// instanceView is one live instance of a region.
type instanceView struct {
	Name string `json:"name"`
	// Since is when it registered (RFC 3339, its own clock).
	Since string `json:"since"`
	// CreateRevision is its liveness key's etcd create revision: a
	// restarted instance has a new one.
	CreateRevision int64 `json:"create_revision"`
}

// regionsOptions are the flags of `idemctl regions`, read by its run.
type regionsOptions struct {
	f      connFlags
	format string
}

func regionsCmd() *cobra.Command {
	var opts regionsOptions
	cmd := &cobra.Command{
		Use:   "regions",
		Short: "Show each region's failover state and for how long, live instances and the shards it owns",
		Long: `regions shows the failover controller's view of each region and for how long
it has held: healthy; suspect (no live instance, not yet confirmed); failed (no
live instance for the confirmation delay: its shards are moved away); recovering
(instances back after a failure, for less than the hold time; failback is
refused until it is healthy). The elected controller publishes that view in
etcd; without one (no controller ever led) the state is derived from one read.

It also reads etcd linearizably: the liveness keys of every region's idemd
instances (each under a session lease: an instance that stopped answering
disappears within the lease TTL, etcd.liveness_ttl, 2 s by default), HEALTH up with at least one
live instance and down with none, and the ownership directory. A read: it needs
no reason and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd)
		},
	}
	opts.f.addCluster(cmd)
	addOutputFlag(cmd, &opts.format)
	return cmd
}

// run is `idemctl regions`'s work, its flags read into opts.
func (opts *regionsOptions) run(cmd *cobra.Command) error {
	if err := checkOutput(opts.format); err != nil {
		return err
	}
	top, _, cli, err := opts.f.connect(cmd.Context())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := etcdContext(cmd)
	defer cancel()
	instances, err := ownership.Instances(ctx, cli, ownership.DefaultPrefix, "")
	if err != nil {
		return err
	}
	sts, view, fromController, err := failover.Current(ctx, cli, ownership.DefaultPrefix, top)
	if err != nil {
		return err
	}
	now := time.Now()
	entries, _, err := ownership.NewDirectory(cli, nil, quiet()).List(ctx)
	if err != nil {
		return err
	}
	views := map[string]*regionView{}
	var order []string
	for _, r := range top.Regions() {
		views[r.Name] = &regionView{Region: r.Name, URL: r.URL, Health: "down", Shards: map[string]int{},
			Instances: []instanceView{}}
		order = append(order, r.Name)
	}
	for _, st := range sts {
		v := views[st.Region]
		v.State = st.State
		if !st.Since.IsZero() {
			since := st.Since.UTC()
			v.Since, v.For = &since, now.Sub(since).Round(time.Second).String()
		}
	}
	for _, in := range instances {
		if v := views[in.Region]; v != nil {
			v.Instances = append(v.Instances, instanceView{Name: in.Name, Since: in.Since, CreateRevision: in.CreateRevision})
			v.Health = "up"
		}
	}
	for _, e := range entries {
		if v := views[viewOf(e, "").Owner]; v != nil {
			v.Shards[string(e.State)]++
		}
		if v := views[top.Home(e.Shard)]; v != nil {
			v.Home++
			if owner := viewOf(e, "").Owner; owner != v.Region || e.State != ownership.Active {
				if v.HomeElsewhere == nil {
					v.HomeElsewhere = map[string]int{}
				}
				v.HomeElsewhere[owner]++
			}
		}
	}
	out, list := regionsTable(order, views)
	source := "state: derived from one read (no failover controller has published its view)"
	if fromController {
		source = fmt.Sprintf("state: failover controller %s (term %d), published %s ago", view.Controller, view.Term,
			now.Sub(view.Published).Round(time.Second))
	}
	if opts.format == outputJSON {
		out.v = map[string]any{"regions": list, "source": source, "controller_view": fromController}
		return render(cmd.OutOrStdout(), opts.format, out)
	}
	if err := render(cmd.OutOrStdout(), opts.format, out); err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), source)
	for _, h := range failbackHints(list) {
		fmt.Fprintln(cmd.OutOrStdout(), h)
	}
	return nil
}

// failbackHints says, for each region that is healthy with a live
// instance while some of its home shards are still owned elsewhere (or
// not ACTIVE), that a failback is pending, and the command.
func failbackHints(regions []*regionView) []string {
	var hints []string
	for _, v := range regions {
		if v.State != failover.Healthy || v.Health != "up" || len(v.HomeElsewhere) == 0 {
			continue
		}
		var n int
		owners := make([]string, 0, len(v.HomeElsewhere))
		for o, k := range v.HomeElsewhere {
			n += k
			owners = append(owners, o)
		}
		sort.Strings(owners)
		where := make([]string, len(owners))
		for i, o := range owners {
			where[i] = fmt.Sprintf("%s %d", o, v.HomeElsewhere[o])
		}
		hints = append(hints, fmt.Sprintf("failback pending: %s is healthy, but %d of its %d home shards are elsewhere (%s); "+
			"once what it left in flight is reconciled: idemctl failback %s --reason TEXT",
			v.Region, n, v.Home, strings.Join(where, ", "), v.Region))
	}
	return hints
}

// regionsTable is the regions in topology order, as a table and as the
// list -o json prints.
func regionsTable(order []string, views map[string]*regionView) (table, []*regionView) {
	out := table{header: []string{"REGION", "STATE", "FOR", "HEALTH", "INSTANCES", "SHARDS OWNED", "HOME SHARDS", "URL"}}
	var list []*regionView
	for _, name := range order {
		v := views[name]
		list = append(list, v)
		var names, owned []string
		for _, in := range v.Instances {
			names = append(names, in.Name)
		}
		for _, st := range []ownership.State{ownership.Active, ownership.FailedOver, ownership.Fencing} {
			if n := v.Shards[string(st)]; n > 0 {
				owned = append(owned, strconv.Itoa(n)+" "+string(st))
			}
		}
		if len(names) == 0 {
			names = []string{"-"}
		}
		if len(owned) == 0 {
			owned = []string{"0"}
		}
		age := v.For
		if age == "" {
			age = "-"
		}
		out.rows = append(out.rows, []string{name, string(v.State), age, v.Health, strings.Join(names, ","),
			strings.Join(owned, ", "), strconv.Itoa(v.Home), v.URL})
	}
	return out, list
}
