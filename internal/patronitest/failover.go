package patronitest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/internal/patronilocal"
)

// KillTiming is one unplanned primary loss, phase by phase, from the
// SIGKILL of the primary (Patroni and PostgreSQL) to the first write a
// client got acknowledged by the new primary.
type KillTiming struct {
	// Expire is the kill to the leader key's deletion in etcd: the rest
	// of the key's lease (ttl, renewed every loop_wait).
	Expire time.Duration
	// Elect is the deletion to a survivor writing its own leader key (its
	// next HA loop, at most loop_wait, plus its checks of the others).
	Elect time.Duration
	// Promote is the new leader key to its PostgreSQL leaving recovery.
	Promote time.Duration
	// FirstCommit is the promotion to the first acknowledged write: the
	// client reconnecting (multi-host DSN, read-write) and, in strict
	// mode, a synchronous standby attaching to the new primary.
	FirstCommit time.Duration
	// Total is the kill to the first acknowledged write.
	Total time.Duration
	// Prep is a prepared switchover's preparation, before the request
	// (MeasureSwitchover): not part of Total.
	Prep time.Duration
}

// MeasureKill kills c's primary while w writes, and times each phase until
// w's first write acknowledged by another member. cli watches the leader
// key. The killed member is restarted (it rejoins through pg_rewind) and
// the cluster is healthy again when it returns.
func MeasureKill(ctx context.Context, c *patronilocal.Cluster, cli *clientv3.Client, w *Writer) (KillTiming, error) {
	old, err := c.Primary(ctx)
	if err != nil {
		return KillTiming{}, err
	}
	kt, err := measure(ctx, c, cli, w, old, func() error { return c.Kill(old.Name) })
	if err != nil {
		return kt, err
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return kt, err
	}
	return kt, c.Restart(ctx, old.Name)
}

// measure runs act (which takes the primary old away) and times the
// phases from its start until w's first write acknowledged by another
// member.
func measure(ctx context.Context, c *patronilocal.Cluster, cli *clientv3.Client, w *Writer, old patronilocal.MemberStatus, act func() error) (KillTiming, error) {
	var kt KillTiming
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Watch from the key's current revision on, so no change made once
	// act starts can be missed.
	cur, err := cli.Get(ctx, c.LeaderKey())
	if err != nil {
		return kt, err
	}
	watch := cli.Watch(wctx, c.LeaderKey(), clientv3.WithRev(cur.Header.Revision+1))
	promoted := make(chan time.Time, 1)
	go watchPromotion(wctx, c, old.Name, promoted)
	// The key's changes are timed as they arrive, while act may still
	// be waiting (a switchover returns once the cluster is healthy).
	type handover struct{ deleted, acquired time.Time }
	handed := make(chan handover, 1)
	go func() {
		var h handover
		for resp := range watch {
			for _, ev := range resp.Events {
				now := time.Now()
				switch {
				case ev.Type == clientv3.EventTypeDelete && h.deleted.IsZero():
					h.deleted = now
				case ev.Type == clientv3.EventTypePut && string(ev.Kv.Value) != old.Name:
					if h.deleted.IsZero() {
						h.deleted = now // the key changed hands in one write
					}
					h.acquired = now
					handed <- h
					return
				}
			}
		}
	}()
	t0 := time.Now()
	if err := act(); err != nil {
		return kt, err
	}
	var h handover
	select {
	case h = <-handed:
	case <-ctx.Done():
		return kt, fmt.Errorf("patronitest: the leader key %s did not change hands: %w", c.LeaderKey(), ctx.Err())
	}
	deleted, acquired := h.deleted, h.acquired
	var promotedAt time.Time
	select {
	case promotedAt = <-promoted:
	case <-ctx.Done():
		return kt, ctx.Err()
	}
	ack, ok := w.FirstAckAfter(ctx, t0, old.Addr, 2*time.Minute)
	if !ok {
		return kt, fmt.Errorf("patronitest: no write acknowledged by a member other than %s", old.Name)
	}
	return KillTiming{Expire: deleted.Sub(t0), Elect: acquired.Sub(deleted), Promote: promotedAt.Sub(acquired),
		FirstCommit: ack.At.Sub(promotedAt), Total: ack.At.Sub(t0)}, nil
}

// watchPromotion sends the time a member other than old first answers
// pg_is_in_recovery() = false.
func watchPromotion(ctx context.Context, c *patronilocal.Cluster, old string, out chan<- time.Time) {
	var dsns []string
	for _, m := range c.Members() {
		if m.Name != old {
			dsn, _ := c.MemberDSN(m.Name)
			dsns = append(dsns, dsn)
		}
	}
	conns := make([]*pgx.Conn, len(dsns))
	defer func() {
		for _, cn := range conns {
			if cn != nil {
				cn.Close(context.Background())
			}
		}
	}()
	for ctx.Err() == nil {
		for i, dsn := range dsns {
			if conns[i] == nil {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				cn, err := pgx.Connect(cctx, dsn)
				cancel()
				if err != nil {
					continue
				}
				conns[i] = cn
			}
			var inRecovery bool
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			err := conns[i].QueryRow(qctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery)
			cancel()
			if err != nil {
				conns[i].Close(context.Background())
				conns[i] = nil
				continue
			}
			if !inRecovery {
				out <- time.Now()
				return
			}
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// MeasureSwitchover switches c's primary over (POST /switchover, as
// `patronictl switchover` does) while w writes, and times the phases from
// the request to w's first write acknowledged by the new primary: Expire
// is then the old primary's demotion (its HA loop, a checkpoint, its
// shutdown) until it releases the leader key. It starts from a settled
// cluster (a synchronous standby and the third member streaming).
//
// prepared runs the planned switchover of docs/runbook.md: both standbys
// are made synchronous first (synchronous_node_count 2, timed as Prep,
// outside Total: no request waits on it), so the third member races for
// the released key, loses, and follows the new primary at once, instead
// of sitting out Patroni's 2 s "not the healthiest node" pause while
// every commit on the new primary waits for a standby; the count is set
// back to 1 after. Without prepared, the switchover goes to the one
// synchronous standby as the cluster stands.
func MeasureSwitchover(ctx context.Context, c *patronilocal.Cluster, cli *clientv3.Client, w *Writer, prepared bool) (KillTiming, error) {
	if err := c.WaitSynced(ctx, 1); err != nil {
		return KillTiming{}, err
	}
	var prep time.Duration
	if prepared {
		p0 := time.Now()
		if err := c.SetSyncStandbys(ctx, 2); err != nil {
			return KillTiming{}, err
		}
		prep = time.Since(p0)
	}
	old, err := c.Primary(ctx)
	if err != nil {
		return KillTiming{}, err
	}
	kt, err := measure(ctx, c, cli, w, old, func() error { return c.Switchover(ctx, "") })
	kt.Prep = prep
	if err != nil {
		return kt, err
	}
	if prepared {
		return kt, c.SetSyncStandbys(ctx, 1)
	}
	return kt, c.WaitSynced(ctx, 1)
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of ds.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s))+0.999999) - 1
	rank = max(0, min(rank, len(s)-1))
	return s[rank]
}

// Report is the p50/p99 of each phase over kts, as a Markdown table.
func Report(kts []KillTiming) string {
	phases := []struct {
		name string
		get  func(KillTiming) time.Duration
	}{
		{"release (kill: ttl left on the leader key; switchover: demotion)", func(k KillTiming) time.Duration { return k.Expire }},
		{"elect (a survivor takes the key)", func(k KillTiming) time.Duration { return k.Elect }},
		{"promote (PostgreSQL leaves recovery)", func(k KillTiming) time.Duration { return k.Promote }},
		{"first commit (reconnect + sync standby)", func(k KillTiming) time.Duration { return k.FirstCommit }},
		{"total (fault to first commit)", func(k KillTiming) time.Duration { return k.Total }},
	}
	if len(kts) > 0 && kts[0].Prep > 0 {
		phases = append(phases, struct {
			name string
			get  func(KillTiming) time.Duration
		}{"prep, before the request (synchronous_node_count 2 until both standbys are synchronous)", func(k KillTiming) time.Duration { return k.Prep }})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| phase (n=%d) | p50 | p99 | max |\n|---|---|---|---|\n", len(kts))
	for _, ph := range phases {
		ds := make([]time.Duration, len(kts))
		for i, k := range kts {
			ds[i] = ph.get(k)
		}
		fmt.Fprintf(&b, "| %s | %.2f s | %.2f s | %.2f s |\n", ph.name, Percentile(ds, 50).Seconds(), Percentile(ds, 99).Seconds(), Percentile(ds, 100).Seconds())
	}
	return b.String()
}
