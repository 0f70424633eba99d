package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/ownership"
	"github.com/idemcoord/idemcoord/shard"
)

// defaultDrain is how long a planned move lets the old owner finish its
// operations in flight: the dev cluster's upstream timeout (10 s), so a
// call that started before the move can still record its answer.
const defaultDrain = 10 * time.Second

// moveOptions are the flags of `idemctl move`, read by its run.
type moveOptions struct {
	f        connFlags
	af       auditFlags
	shardNum int
	actor    string
	to       string
	format   string
	drain    time.Duration
	list     bool
}

func moveCmd() *cobra.Command {
	var opts moveOptions
	cmd := &cobra.Command{
		Use:   "move (--shard N | --actor TENANT/SUBJECT) --to REGION --reason TEXT",
		Short: "Move a shard to another region: a planned, fenced transfer (audited)",
		Long: `move runs the transfer protocol for one shard: etcd compare-and-swap to
FENCING with epoch+1 -> the old owner's operations in flight finish (at most --drain-timeout,
which must be shorter than the failover controller's StuckAfter, 1m: a transfer left
FENCING that long is finished by the controller)
-> SQL fence bump (audited with --operator and --reason)
-> etcd ACTIVE. From the first step on nobody writes the shard; the old owner's
late writes are refused by the fence; the new owner serves once the move
commits. An interrupted move is finished by the next one. A repair: it needs
--operator and --reason.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd)
		},
	}
	opts.f.addCluster(cmd)
	opts.f.addStore(cmd)
	opts.af.add(cmd, "why the shard moves, recorded in the audit (required)")
	cmd.Flags().IntVar(&opts.shardNum, "shard", 0, "shard to move")
	cmd.Flags().StringVar(&opts.actor, "actor", "", "move the shard of this actor scope TENANT/SUBJECT")
	cmd.Flags().StringVar(&opts.to, "to", "", "region that will own the shard (required)")
	cmd.Flags().DurationVar(&opts.drain, "drain-timeout", defaultDrain,
		fmt.Sprintf("how long to let the old owner finish what it already started before fencing it; "+
			"shorter than the failover controller's StuckAfter (%s), which would cut it", config.FormatDuration(failover.DefaultStuckAfter)))
	cmd.Flags().BoolVar(&opts.list, "list", false, "print the shard's new entry as a table, not only the summary")
	addOutputFlag(cmd, &opts.format)
	return cmd
}

// run is `idemctl move`'s work, its flags read into opts.
func (opts *moveOptions) run(cmd *cobra.Command) error {
	byShard, byActor := cmd.Flags().Changed("shard"), opts.actor != ""
	var errs []error
	errs = append(errs, checkOutput(opts.format), opts.af.checkRepair(),
		failover.CheckDrain("--drain-timeout", opts.drain, failover.DefaultStuckAfter))
	switch {
	case byShard == byActor:
		errs = append(errs, errors.New("give exactly one of --shard N and --actor TENANT/SUBJECT"))
	case byActor:
		errs = append(errs, checkActorScope(opts.actor))
	}
	if opts.to == "" {
		errs = append(errs, errors.New("missing --to REGION: the region that will own the shard"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	top, cfg, err := opts.f.topology()
	if err != nil {
		return err
	}
	if !top.Has(opts.to) {
		return fmt.Errorf("--to: %q is not a region of the topology %v", opts.to, top.Names())
	}
	if byActor {
		opts.shardNum = shard.Of(opts.actor, cfg.Shards)
	}
	if opts.shardNum < 0 || opts.shardNum >= cfg.Shards {
		return fmt.Errorf("--shard: must be within 0 and %d, got %d", cfg.Shards-1, opts.shardNum)
	}
	store, err := opts.f.open(cmd.Context())
	if err != nil {
		return err
	}
	defer store.Close()
	cli, err := opts.f.client(cmd.Context())
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := etcdContext(cmd)
	defer cancel()
	dir := ownership.NewDirectory(cli, store, quiet())
	cur, err := dir.Get(ctx, opts.shardNum)
	if err != nil {
		return err
	}
	if cur.Owner == opts.to && cur.State == ownership.Active {
		v := viewOf(cur, top.Home(opts.shardNum))
		if opts.format == outputJSON {
			return render(cmd.OutOrStdout(), opts.format, table{v: map[string]any{"moved": false, "shard": v}})
		}
		fmt.Fprintf(cmd.OutOrStdout(), "shard %d is already owned by %s (epoch %d, ACTIVE): nothing moved, nothing audited\n",
			opts.shardNum, opts.to, cur.Epoch)
		return nil
	}
	e, err := dir.Move(ctx, opts.shardNum, opts.to, ownership.Active, opts.af.operator, opts.af.reason, ownership.DrainFor(opts.drain))
	if err != nil {
		return err
	}
	v := viewOf(e, top.Home(opts.shardNum))
	if opts.format == outputJSON {
		return render(cmd.OutOrStdout(), opts.format, table{v: v})
	}
	if opts.list {
		if err := render(cmd.OutOrStdout(), opts.format, table{header: shardHeader, rows: [][]string{v.row()}}); err != nil {
			return err
		}
	}
	mv := failover.Moved{Shard: e.Shard, From: cur.Owner, FromEpoch: cur.Epoch, To: e.Owner, Epoch: e.Epoch, State: e.State}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s (epoch %d -> %d)\n",
		movesSummary("move", "shard "+strconv.Itoa(e.Shard), []failover.Moved{mv}), cur.Epoch, e.Epoch)
	return err
}
