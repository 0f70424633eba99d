package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/flagsuggest"
	"github.com/idemcoord/idemcoord/ownership"
)

// moveCommand is one of failover / failback / drain: a region argument,
// connection and repair flags, and the moves printed.
type moveCommand struct {
	flags regionRepairFlags
	force bool
	list  bool
}

// add registers the flags of a region repair, --list among them.
func (m *moveCommand) add(cmd *cobra.Command, reasonHelp string) {
	m.flags.add(cmd, reasonHelp)
	cmd.Flags().BoolVar(&m.list, "list", false, "print every shard moved, not only the summary (and the failures)")
}

// run checks the flags, connects and calls do with a Repair whose health
// filter comes from one fresh read of the liveness keys.
func (m *moveCommand) run(cmd *cobra.Command, action, reg string,
	do func(ctx context.Context, r failover.Repair) ([]failover.Moved, error)) error {
	if err := m.flags.check(); err != nil {
		return err
	}
	// The region is checked before connecting: a typo is answered
	// without a store or etcd.
	if top, _, err := m.flags.conn.topology(); err == nil && !strings.HasPrefix(reg, "shard ") && !top.Has(reg) {
		return unknownRegion(cmd, action, reg, top.Names())
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
	defer cancel()
	c, err := m.flags.open(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if !strings.HasPrefix(reg, "shard ") && !c.topo.Has(reg) {
		return unknownRegion(cmd, action, reg, c.topo.Names())
	}
	sts, view, _, err := failover.Current(ctx, c.cli, c.dir.Prefix(), c.topo)
	if err != nil {
		return err
	}
	byRegion := map[string]failover.RegionStatus{}
	for _, s := range sts {
		byRegion[s.Region] = s
	}
	status := func(reg string) failover.RegionStatus { return byRegion[reg] }
	r := failover.Repair{Client: c.cli, Directory: c.dir, Topology: c.topo, Audit: c.store, Status: status,
		Force: m.force, Concurrency: repairStoreConns, DrainTimeout: defaultDrain, HoldTime: view.HoldTime}
	moved, err := do(ctx, r)
	var nh *failover.RegionNotHealthyError
	if errors.As(err, &nh) {
		return fmt.Errorf("%w (--force, audited as forced)", err)
	}
	if err != nil && len(moved) == 0 {
		return err // nothing was tried: no table
	}
	if rerr := printMoves(cmd.OutOrStdout(), m.flags.output, action, reg, moved, m.list); rerr != nil {
		return rerr
	}
	return err
}

// unknownRegion is the error for a REGION argument that names no region:
// it lists the regions and, when the word is close to a subcommand
// ("failover acept"), names that subcommand.
func unknownRegion(cmd *cobra.Command, action, reg string, names []string) error {
	if sub := flagsuggest.Subcommand(cmd, reg); sub != "" {
		return fmt.Errorf("%s: %q is not a region of the topology (%s); did you mean %q?",
			action, reg, strings.Join(names, ", "), cmd.CommandPath()+" "+sub)
	}
	return fmt.Errorf("%s: %q is not a region of the topology (%s)", action, reg, strings.Join(names, ", "))
}

// printMoves renders the moves of one command: the failed moves, every
// move with list (--list), and a summary line last. -o json always has
// every move.
func printMoves(w io.Writer, format, action, reg string, moved []failover.Moved, list bool) error {
	if moved == nil {
		moved = []failover.Moved{}
	}
	t := table{header: []string{"SHARD", "FROM", "FROM_EPOCH", "TO", "EPOCH", "STATE", "ERROR"},
		v: map[string]any{"action": action, "region": reg, "shards": moved, "summary": movesSummary(action, reg, moved)}}
	if format == outputJSON {
		return render(w, format, t)
	}
	for _, mv := range moved {
		if list || mv.Err != "" {
			t.rows = append(t.rows, []string{strconv.Itoa(mv.Shard), mv.From, strconv.FormatInt(mv.FromEpoch, 10),
				mv.To, strconv.FormatInt(mv.Epoch, 10), string(mv.State), mv.Err})
		}
	}
	if len(t.rows) > 0 {
		if err := render(w, format, t); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w, movesSummary(action, reg, moved))
	return err
}

// movesSummary is the last line of a region repair: how many of the
// shards it tried moved, where to, and how many failed.
func movesSummary(action, reg string, moved []failover.Moved) string {
	if len(moved) == 0 {
		return fmt.Sprintf("%s %s: no shard to move", action, reg)
	}
	to := map[string]int{}
	var ok int
	for _, mv := range moved {
		if mv.Err == "" {
			ok++
			to[mv.To]++
		}
	}
	dests := make([]string, 0, len(to))
	for r := range to {
		dests = append(dests, r)
	}
	sort.Strings(dests)
	var where string
	switch {
	case action == "accept":
		where = " accepted: ACTIVE, owner unchanged"
		if len(dests) == 1 {
			where += " (" + dests[0] + ")"
		}
	case len(dests) == 1:
		where = " moved to " + dests[0]
	default:
		parts := make([]string, len(dests))
		for i, r := range dests {
			parts[i] = fmt.Sprintf("%d to %s", to[r], r)
		}
		where = " moved: " + strings.Join(parts, ", ")
	}
	if ok == 0 && action != "accept" {
		where = " moved"
	}
	line := fmt.Sprintf("%s %s: %d of %s%s", action, reg, ok, count(len(moved), "shard", "shards"), where)
	if state := movedState(moved); state != "" && action != "accept" {
		line += ", " + state
	}
	if failed := len(moved) - ok; failed > 0 {
		line += fmt.Sprintf("; %d failed: run it again to finish them", failed)
	}
	return line
}

// movedState is the state every committed move ended in, or "".
func movedState(moved []failover.Moved) string {
	var state ownership.State
	for _, mv := range moved {
		if mv.Err != "" {
			continue
		}
		if state != "" && mv.State != state {
			return ""
		}
		state = mv.State
	}
	return string(state)
}

func failoverCmd() *cobra.Command {
	var m moveCommand
	cmd := &cobra.Command{
		Use:   "failover REGION --operator NAME --reason TEXT",
		Short: "Move every shard REGION owns to its failover region, FAILED_OVER (audited)",
		Long: `failover does by hand what the elected controller does when a region fails:
every shard REGION owns moves to its failover region (the first healthy region
in its home's successor order) under a new fencing epoch, one epoch step per
shard, and ends FAILED_OVER. Endpoints with the reject policy then refuse
those shards' writes until "idemctl failover accept" or "idemctl failback".

Each shard's move is audited with the fence bump; the command writes one more
audit row for the whole failover. It is safe to run while the controller runs:
each shard has one winner. Run it again to finish shards that failed.`,
		Example: `  idemctl failover eu-west --config idemd.yaml --operator alice --reason "eu-west unreachable, INC-42"`,
		Args:    oneArg("REGION, the region to fail over"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.run(cmd, "failover", args[0], func(ctx context.Context, r failover.Repair) ([]failover.Moved, error) {
				return r.Failover(ctx, args[0], m.flags.audit.operator, m.flags.audit.reason)
			})
		},
	}
	m.add(cmd, "why the region is failed over, recorded in the audit (required)")
	cmd.AddCommand(acceptCmd())
	return cmd
}

func failbackCmd() *cobra.Command {
	var m moveCommand
	cmd := &cobra.Command{
		Use:   "failback REGION --operator NAME --reason TEXT",
		Short: "Move every shard whose home is REGION back to it, ACTIVE (audited)",
		Long: `failback moves every shard whose home region is REGION and that another region
owns (or that is not ACTIVE) back to REGION under a new fencing epoch, ending
ACTIVE. Run it once REGION is healthy again ("idemctl regions") and, for
endpoints with the reject policy, after reconciling what it left in flight.

It refuses, moving nothing, while REGION has no live instance or the failover
controller does not call it healthy (suspect, failed, or recovering during its
hold time): the controller would fail the shards over again at once, each time
under a new epoch, undoing any "failover accept" given in between. --force
overrides that; the audit row then says forced and what the state was.`,
		Example: `  idemctl failback eu-west --config idemd.yaml --operator alice --reason "eu-west restored, INC-42"`,
		Args:    oneArg("REGION, the region whose shards go home"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.run(cmd, "failback", args[0], func(ctx context.Context, r failover.Repair) ([]failover.Moved, error) {
				return r.Failback(ctx, args[0], m.flags.audit.operator, m.flags.audit.reason)
			})
		},
	}
	m.add(cmd, "why the shards go home, recorded in the audit (required)")
	cmd.Flags().BoolVar(&m.force, "force", false,
		"fail back even though REGION is not healthy with a live instance (the audit row says forced, and the state)")
	return cmd
}

func drainCmd() *cobra.Command {
	var m moveCommand
	cmd := &cobra.Command{
		Use:   "drain REGION --operator NAME --reason TEXT",
		Short: "Move every shard REGION owns to its failover region, ACTIVE: a planned move (audited)",
		Long: `drain is a planned failover, for maintenance: every shard REGION owns moves to
its failover region (its home if that is another healthy region, else the
first healthy region in its home's successor order) under a new fencing epoch
and stays ACTIVE, so endpoints with the reject policy keep serving. Bring the
shards back with "idemctl failback REGION".

Only a live, healthy region is drained: a region that is down is failed over
(the controller does it, or "idemctl failover"), so that what it left in flight
is reconciled before its shards serve again. --force overrides that, audited.
Shards only go to regions that are healthy with a live instance.`,
		Example: `  idemctl drain us-east --config idemd.yaml --operator alice --reason "kernel upgrade, CHG-7"`,
		Args:    oneArg("REGION, the region to drain"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return m.run(cmd, "drain", args[0], func(ctx context.Context, r failover.Repair) ([]failover.Moved, error) {
				return r.Drain(ctx, args[0], m.flags.audit.operator, m.flags.audit.reason)
			})
		},
	}
	m.add(cmd, "why the region is drained, recorded in the audit (required)")
	cmd.Flags().BoolVar(&m.force, "force", false,
		"drain even though REGION is not healthy with a live instance (the audit row says forced, and the state)")
	return cmd
}

func acceptCmd() *cobra.Command {
	var m moveCommand
	var shard int
	var reg string
	cmd := &cobra.Command{
		Use:   "accept (--shard N | --region R) --operator NAME --reason TEXT",
		Short: "Accept the new owner of FAILED_OVER shards: mark them ACTIVE (audited)",
		Long: `accept tells the deployment that an operator has reconciled what the failed
region left in flight (operations IN_PROGRESS or OUTCOME_UNKNOWN there: list
them with "idemctl op list --region R", settle each with "idemctl op reconcile")
and accepts the new owner: the selected FAILED_OVER shards become
ACTIVE with the same owner and epoch, so endpoints with the reject policy serve
them again. --shard N selects one shard; --region R every FAILED_OVER shard
whose home region is R (the shards that failed over away from R).

The audit row is written before the change.`,
		Example: `  idemctl failover accept --region eu-west --config idemd.yaml --operator alice --reason "reconciled INC-42"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			hasShard, hasRegion := cmd.Flags().Changed("shard"), reg != ""
			if hasShard == hasRegion {
				return errors.New("accept needs exactly one of --shard N or --region R")
			}
			sel := failover.RegionSelection(reg)
			what := reg
			if hasShard {
				if shard < 0 {
					return fmt.Errorf("--shard: must not be negative, got %d", shard)
				}
				sel, what = failover.ShardSelection(shard), "shard "+strconv.Itoa(shard)
			}
			return m.run(cmd, "accept", what, func(ctx context.Context, r failover.Repair) ([]failover.Moved, error) {
				return r.Accept(ctx, sel, m.flags.audit.operator, m.flags.audit.reason)
			})
		},
	}
	m.add(cmd, "why the new owner is accepted (the reconciliation done), recorded in the audit (required)")
	cmd.Flags().IntVar(&shard, "shard", 0, "accept this shard")
	cmd.Flags().StringVar(&reg, "region", "", "accept every FAILED_OVER shard whose home is this region")
	return cmd
}
