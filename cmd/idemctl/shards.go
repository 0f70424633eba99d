package main

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/ownership"
)

// shardView is one shard as idemctl prints it.
type shardView struct {
	Shard int    `json:"shard"`
	Home  string `json:"home"`
	Owner string `json:"owner"`
	Epoch int64  `json:"epoch"`
	State string `json:"state"`
	// Moving is the transfer's target while the shard is FENCING.
	Moving string `json:"moving_to,omitempty"`
}

func viewOf(e ownership.Entry, home string) shardView {
	v := shardView{Shard: e.Shard, Home: home, Owner: e.Owner, Epoch: e.Epoch, State: string(e.State)}
	if e.State == ownership.Fencing {
		v.Moving = e.Owner
		if e.Transfer != nil {
			v.Owner = e.Transfer.FromOwner
		}
	}
	return v
}

func (v shardView) row() []string {
	return []string{strconv.Itoa(v.Shard), v.Home, v.Owner, strconv.FormatInt(v.Epoch, 10), v.State, v.Moving}
}

var shardHeader = []string{"SHARD", "HOME", "OWNER", "EPOCH", "STATE", "MOVING TO"}

// checkActorScope refuses an actor that is not a tenant/subject scope.
func checkActorScope(actor string) error {
	tenant, subject, ok := strings.Cut(actor, "/")
	if !ok || tenant == "" || subject == "" {
		return fmt.Errorf("--actor: %q is not an actor scope TENANT/SUBJECT (a dev cluster actor NAME is demo/NAME)", actor)
	}
	return nil
}

func ownerCmd() *cobra.Command {
	var (
		f      connFlags
		actor  string
		format string
	)
	cmd := &cobra.Command{
		Use:   "owner --actor TENANT/SUBJECT",
		Short: "Show which region owns an actor: shard, home, owner, epoch, state",
		Long: `owner hashes the actor scope to its shard and reads the shard's entry in
the etcd ownership directory (a linearizable read). The home region is a pure
function of the shard and the regions list; in steady state the owner is the
home. A read: it needs no reason and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := errors.Join(checkOutput(format), checkActorScope(actor)); err != nil {
				return err
			}
			top, cfg, cli, err := f.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, cancel := etcdContext(cmd)
			defer cancel()
			shard := fencing.ShardOf(actor, cfg.Shards)
			e, err := ownership.NewDirectory(cli, nil, quiet()).Get(ctx, shard)
			if err != nil {
				return err
			}
			v := viewOf(e, top.Home(shard))
			return render(cmd.OutOrStdout(), format, table{header: append([]string{"ACTOR"}, shardHeader...),
				rows: [][]string{append([]string{actor}, v.row()...)},
				v: struct {
					Actor string `json:"actor"`
					shardView
				}{actor, v}})
		},
	}
	f.addCluster(cmd)
	cmd.Flags().StringVar(&actor, "actor", "", "actor scope TENANT/SUBJECT (required)")
	cmd.MarkFlagRequired("actor")
	addOutputFlag(cmd, &format)
	return cmd
}

func shardsCmd() *cobra.Command {
	var (
		f      connFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "shards",
		Short: "Show the whole ownership map, with counts per region and state",
		Long: `shards lists every shard's entry in the etcd ownership directory (one
linearizable read): home, owner, epoch and state, and how many shards each
region owns in each state. A read: it needs no reason and changes nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return err
			}
			top, _, cli, err := f.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer cli.Close()
			ctx, cancel := etcdContext(cmd)
			defer cancel()
			entries, _, err := ownership.NewDirectory(cli, nil, quiet()).List(ctx)
			if err != nil {
				return err
			}
			counts := map[string]map[string]int{}
			var views []shardView
			for _, e := range entries {
				v := viewOf(e, top.Home(e.Shard))
				views = append(views, v)
				if counts[v.Owner] == nil {
					counts[v.Owner] = map[string]int{}
				}
				counts[v.Owner][v.State]++
			}
			if format == outputJSON {
				return render(cmd.OutOrStdout(), format, table{v: map[string]any{"counts": counts, "shards": views}})
			}
			var rows [][]string
			owners := make([]string, 0, len(counts))
			for o := range counts {
				owners = append(owners, o)
			}
			sort.Strings(owners)
			for _, o := range owners {
				for _, st := range []ownership.State{ownership.Active, ownership.FailedOver, ownership.Fencing} {
					if n := counts[o][string(st)]; n > 0 {
						rows = append(rows, []string{o, string(st), strconv.Itoa(n)})
					}
				}
			}
			if err := render(cmd.OutOrStdout(), format, table{header: []string{"OWNER", "STATE", "SHARDS"}, rows: rows}); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout())
			rows = rows[:0]
			for _, v := range views {
				rows = append(rows, v.row())
			}
			return render(cmd.OutOrStdout(), format, table{header: shardHeader, rows: rows})
		},
	}
	f.addCluster(cmd)
	addOutputFlag(cmd, &format)
	return cmd
}
