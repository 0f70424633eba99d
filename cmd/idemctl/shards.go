package main

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/shard"
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
			shard := shard.Of(actor, cfg.Shards)
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

// shardsOptions are the flags of `idemctl shards`, read by its run.
type shardsOptions struct {
	f            connFlags
	format       string
	owner, state string
	home         string
	list         bool
}

func shardsCmd() *cobra.Command {
	var opts shardsOptions
	cmd := &cobra.Command{
		Use:   "shards [--owner R] [--home R] [--state S] [--list]",
		Short: "Show the ownership map: counts per owner and state, and the shards selected",
		Long: `shards reads every shard's entry in the etcd ownership directory (one
linearizable read) and prints how many shards each region owns in each state.
--owner, --home and --state select shards: the counts are then of the
selection, and say how many of all shards it holds. --list lists every selected
shard (home, owner, epoch, state; all 1024 without a filter). -o json always
carries the counts and the selected shards. A read: it needs no reason
and changes nothing.`,
		Example: `  idemctl shards
  idemctl shards --state FAILED_OVER
  idemctl shards --owner eu-west --home us-east --list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd)
		},
	}
	opts.f.addCluster(cmd)
	cmd.Flags().StringVar(&opts.owner, "owner", "", "select the shards this region owns")
	cmd.Flags().StringVar(&opts.home, "home", "", "select the shards whose home is this region")
	cmd.Flags().StringVar(&opts.state, "state", "", "select the shards in this state: ACTIVE, FAILED_OVER or FENCING")
	cmd.Flags().BoolVar(&opts.list, "list", false, "list the selected shards (every shard without --owner, --home or --state)")
	addOutputFlag(cmd, &opts.format)
	return cmd
}

// run is `idemctl shards`'s work, its flags read into opts.
func (opts *shardsOptions) run(cmd *cobra.Command) error {
	if err := checkOutput(opts.format); err != nil {
		return err
	}
	opts.state = strings.ToUpper(opts.state)
	switch ownership.State(opts.state) {
	case "", ownership.Active, ownership.FailedOver, ownership.Fencing:
	default:
		return fmt.Errorf("--state: %q is not a shard state (ACTIVE, FAILED_OVER, FENCING)", opts.state)
	}
	top, _, cli, err := opts.f.connect(cmd.Context())
	if err != nil {
		return err
	}
	defer cli.Close()
	for flag, r := range map[string]string{"--owner": opts.owner, "--home": opts.home} {
		if r != "" && !top.Has(r) {
			return fmt.Errorf("%s: %q is not a region of the topology %v", flag, r, top.Names())
		}
	}
	ctx, cancel := etcdContext(cmd)
	defer cancel()
	entries, _, err := ownership.NewDirectory(cli, nil, quiet()).List(ctx)
	if err != nil {
		return err
	}
	views := []shardView{}
	for _, e := range entries {
		v := viewOf(e, top.Home(e.Shard))
		if (opts.owner == "" || v.Owner == opts.owner) && (opts.home == "" || v.Home == opts.home) && (opts.state == "" || v.State == opts.state) {
			views = append(views, v)
		}
	}
	filtered := opts.owner != "" || opts.home != "" || opts.state != ""
	return writeShards(cmd.OutOrStdout(), opts.format, views, len(entries), filtered, opts.list)
}

// writeShards prints the selected shards: how many each owner holds in
// each state, how many of total were selected, and, with list, each
// shard. -o json has the counts and every selected shard.
func writeShards(w io.Writer, format string, views []shardView, total int, filtered, list bool) error {
	counts := map[string]map[string]int{}
	for _, v := range views {
		if counts[v.Owner] == nil {
			counts[v.Owner] = map[string]int{}
		}
		counts[v.Owner][v.State]++
	}
	if format == outputJSON {
		return render(w, format, table{v: map[string]any{"counts": counts, "shards": views,
			"selected": len(views), "total": total}})
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
	if len(rows) > 0 {
		if err := render(w, format, table{header: []string{"OWNER", "STATE", "SHARDS"}, rows: rows}); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if list && len(views) > 0 {
		rows = rows[:0]
		for _, v := range views {
			rows = append(rows, v.row())
		}
		if err := render(w, format, table{header: shardHeader, rows: rows}); err != nil {
			return err
		}
	}
	switch {
	case !filtered && list:
		fmt.Fprintf(w, "%s\n", count(total, "shard", "shards"))
	case !filtered:
		fmt.Fprintf(w, "%s; list them with --list, or select with --owner, --home, --state\n", count(total, "shard", "shards"))
	case list || len(views) == 0:
		fmt.Fprintf(w, "%d of %d shards selected\n", len(views), total)
	default:
		fmt.Fprintf(w, "%d of %d shards selected; list them with --list\n", len(views), total)
	}
	return nil
}
