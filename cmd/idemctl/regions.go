package main

import (
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/ownership"
)

// regionView is one region as `idemctl regions` prints it.
type regionView struct {
	Region    string               `json:"region"`
	URL       string               `json:"url"`
	Health    string               `json:"health"`
	Instances []ownership.Instance `json:"instances"`
	// Shards counts the shards the region owns, by state.
	Shards map[string]int `json:"shards"`
	// Home is how many shards have this region as home.
	Home int `json:"home_shards"`
}

func regionsCmd() *cobra.Command {
	var (
		f      clusterFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "regions",
		Short: "Show each region's health, live instances and the shards it owns",
		Long: `regions reads etcd linearizably: the liveness keys of every region's idemd
instances (each under a session lease: an instance that stopped answering
disappears within the lease TTL, 5 s by default) and the ownership directory.
A region is "up" with at least one live instance and "down" with none. A read:
it needs no reason and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			top, _, cli, err := f.connect()
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
			entries, _, err := ownership.NewDirectory(cli, nil, quiet()).List(ctx)
			if err != nil {
				return err
			}
			views := map[string]*regionView{}
			var order []string
			for _, r := range top.Regions() {
				views[r.Name] = &regionView{Region: r.Name, URL: r.URL, Health: "down", Shards: map[string]int{},
					Instances: []ownership.Instance{}}
				order = append(order, r.Name)
			}
			for _, in := range instances {
				if v := views[in.Region]; v != nil {
					v.Instances = append(v.Instances, in)
					v.Health = "up"
				}
			}
			for _, e := range entries {
				if v := views[viewOf(e, "").Owner]; v != nil {
					v.Shards[string(e.State)]++
				}
				if v := views[top.Home(e.Shard)]; v != nil {
					v.Home++
				}
			}
			out := table{header: []string{"REGION", "HEALTH", "INSTANCES", "SHARDS OWNED", "HOME SHARDS", "URL"}}
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
				out.rows = append(out.rows, []string{name, v.Health, strings.Join(names, ","), strings.Join(owned, ", "),
					strconv.Itoa(v.Home), v.URL})
			}
			out.v = list
			return render(cmd.OutOrStdout(), format, out)
		},
	}
	f.add(cmd)
	addOutputFlag(cmd, &format)
	return cmd
}
