package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/jackc/pgx/v5"

	"github.com/idemcoord/idemcoord/internal/patronilocal"
	"github.com/idemcoord/idemcoord/internal/patronitest"
	"github.com/idemcoord/idemcoord/internal/toxitest"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/storetest"
)

// The latency model of the replicated store (docs/store-ha.md, "The
// latency model"): what a claim costs a coordinator in its own region
// when its home cluster's primary is there and the synchronous standby is
// one injected round trip away, against a coordinator whose primary is in
// another region (one Patroni cluster for every region).

// nextXID is the next transaction id the server will hand out: the
// difference across a run is the number of transactions that wrote (each
// gets one xid at its first write; a read-only transaction gets none and
// its commit waits for no standby).
const nextXID = `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`

// writesOf runs f and returns how many write transactions the server
// behind admin committed meanwhile.
func writesOf(ctx context.Context, admin *pgx.Conn, f func() error) (int64, error) {
	var before, after int64
	if err := admin.QueryRow(ctx, nextXID).Scan(&before); err != nil {
		return 0, err
	}
	if err := f(); err != nil {
		return 0, err
	}
	if err := admin.QueryRow(ctx, nextXID).Scan(&after); err != nil {
		return 0, err
	}
	return after - before, nil
}

// TestAFirstRunWritesTwiceAndAReplayOnce counts the write transactions
// (each one commit that, under synchronous replication, waits for the
// standby: one cross-region round trip) of a first run (Begin, then
// Finish) and of a replay (Begin of the finished key): 2 and 1. The
// replay writes because the claim statement locks its shard's fence row
// FOR SHARE (claimrow.go), which gives the transaction an xid and a WAL
// record, so its commit waits for the standby like any write. With the
// coordinator in its home cluster's region, those commits are a claim's
// only cross-region round trips (BenchmarkStoreLatencyModel times them).
func TestAFirstRunWritesTwiceAndAReplayOnce(t *testing.T) {
	s, dsn := openStore(t, newClock())
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	const n = 20
	reqs := make([]store.ClaimRequest, n)
	for i := range reqs {
		reqs[i] = storetest.Request(t, fmt.Sprintf("actor-%d", i), fmt.Sprintf("k%d", i), `{"a":1}`)
	}
	first, err := writesOf(ctx, admin, func() error {
		for _, req := range reqs {
			c := storetest.MustBegin(t, s, req, store.FirstRun)
			if err := s.Finish(ctx, c.Lease, storetest.Completed(`{"id":"pay_1"}`)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	replays, err := writesOf(ctx, admin, func() error {
		for _, req := range reqs {
			storetest.MustBegin(t, s, req, store.Replayed)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first != 2*n || replays != n {
		t.Errorf("%d first runs wrote %d transactions, %d replays %d; want %d and %d (a claim and a finish each; a replay's claim locks the fence row)", n, first, n, replays, 2*n, n)
	}
}

// latencySamples is how many first runs and replays the latency model
// times per region, RTT and placement (IDEMCOORD_LATENCY_SAMPLES).
func latencySamples(b *testing.B) int {
	if v := os.Getenv("IDEMCOORD_LATENCY_SAMPLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("IDEMCOORD_LATENCY_SAMPLES=%q: want a count", v)
		}
		return n
	}
	return 40
}

// setRTT puts a round trip of rtt on every proxied link (a latency toxic
// on the server-to-client stream: each reply arrives rtt late).
func setRTT(b *testing.B, proxies map[string]*toxiproxy.Proxy, rtt time.Duration) {
	b.Helper()
	doc := fmt.Sprintf(`{"name":"rtt","type":"latency","stream":"downstream","toxicity":1.0,"attributes":{"latency":%d}}`, rtt.Milliseconds())
	for name, p := range proxies {
		if _, err := p.Toxics.UpdateToxicJson("rtt", strings.NewReader(doc)); err != nil {
			if _, err := p.Toxics.AddToxicJson(strings.NewReader(doc)); err != nil {
				b.Fatalf("rtt on %s: %v", name, err)
			}
		}
	}
}

// timed runs one claim step n times on s and returns each call's time and
// the write transactions per call.
func timed(b *testing.B, ctx context.Context, admin *pgx.Conn, n int, f func(i int) error) ([]time.Duration, float64) {
	b.Helper()
	ds := make([]time.Duration, n)
	w, err := writesOf(ctx, admin, func() error {
		for i := range n {
			t0 := time.Now()
			if err := f(i); err != nil {
				return err
			}
			ds[i] = time.Since(t0)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return ds, float64(w) / float64(n)
}

// modelRow is one line of the latency model's table.
type modelRow struct {
	region, placement string
	rtt               time.Duration
	first, replay     []time.Duration
	writes, rwrites   float64
}

// BenchmarkStoreLatencyModel measures the latency model on a real Patroni
// cluster (three members a, b, c standing for three regions, strict
// synchronous replication): every member's replication link runs through
// a toxiproxy adding a round trip of 30 ms, then 80 ms. For each region
// in turn the primary is moved there (a planned switchover), and a
// coordinator there claims and finishes new keys (first runs) and claims
// them again (replays), once connected to the primary directly (its home
// cluster's primary is local: the topology of docs/store.md) and once
// through the primary's proxy (the primary in another region, as with one
// cluster for every region). It prints p50/p99 of each and the write
// transactions per call, and estimates the cross-region round trips per
// first run from the change of its p50 between the two RTTs. Run it with
// -benchtime 1x (one model per run; its samples do not follow b.N) and -v (else the
// benchmark's log is cut to its first lines):
//
//	go test -run '^$' -bench BenchmarkStoreLatencyModel -benchtime 1x -timeout 30m -v ./sqlstore
func BenchmarkStoreLatencyModel(b *testing.B) {
	n := latencySamples(b)
	proxies := map[string]*toxiproxy.Proxy{}
	c := patronitest.Start(b, patronitest.WithConfig(func(cfg *patronilocal.Config) {
		cfg.Advertise = func(member, listen string) (string, error) {
			p := toxitest.Proxy(b, "pg-"+member, listen)
			proxies[member] = p
			return p.Listen, nil
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	rtts := []time.Duration{30 * time.Millisecond, 80 * time.Millisecond}
	var rows []modelRow
	seq := 0
	for _, region := range []string{"a", "b", "c"} {
		setRTT(b, proxies, 0)
		if err := movePrimary(ctx, c, region); err != nil {
			b.Fatal(err)
		}
		direct, err := c.MemberDSN(region)
		if err != nil {
			b.Fatal(err)
		}
		for k, placement := range []struct{ name, addr string }{{"local primary", ""}, {"primary in another region", proxies[region].Listen}} {
			// A fresh database per region and placement, each with its
			// own fences.
			db := fmt.Sprintf("latency_%s_%d", region, k)
			if err := createDatabase(ctx, direct, db); err != nil {
				b.Fatal(err)
			}
			local := withDatabase(b, direct, db)
			dsn := local
			if placement.addr != "" {
				dsn = withDatabase(b, "postgres://postgres@"+placement.addr+"/postgres?sslmode=disable", db)
			}
			admin, err := pgx.Connect(ctx, local)
			if err != nil {
				b.Fatal(err)
			}
			s := openDSNWith(b, dsn, newClock(), sqlstore.GroupCommitOff)
			for _, rtt := range rtts {
				setRTT(b, proxies, rtt)
				reqs := make([]store.ClaimRequest, n)
				for i := range reqs {
					seq++
					reqs[i] = storetest.Request(b, fmt.Sprintf("actor-%d", seq), fmt.Sprintf("k%d", seq), `{"a":1}`)
				}
				first, w := timed(b, ctx, admin, n, func(i int) error {
					cl, err := s.Begin(ctx, reqs[i])
					if err != nil {
						return err
					}
					if cl.Outcome != store.FirstRun {
						return fmt.Errorf("begin = %v, want a first run", cl.Outcome)
					}
					return s.Finish(ctx, cl.Lease, storetest.Completed(`{"id":"pay_1"}`))
				})
				replay, rw := timed(b, ctx, admin, n, func(i int) error {
					cl, err := s.Begin(ctx, reqs[i])
					if err == nil && cl.Outcome != store.Replayed {
						err = fmt.Errorf("begin = %v, want a replay", cl.Outcome)
					}
					return err
				})
				rows = append(rows, modelRow{region: region, placement: placement.name, rtt: rtt, first: first, replay: replay, writes: w, rwrites: rw})
			}
			s.Close()
			admin.Close(ctx)
		}
	}
	setRTT(b, proxies, 0)
	b.Logf("latency model: %d samples each, Patroni %s, strict synchronous replication (one standby), the store's calls one at a time\n%s",
		n, patroniVersion(ctx), modelTable(rows))
}

// movePrimary hands c's primary to member by a planned switchover (both
// standbys synchronous for its length, so member may be either), unless
// it already is primary.
func movePrimary(ctx context.Context, c *patronilocal.Cluster, member string) error {
	if err := c.WaitSynced(ctx, 1); err != nil {
		return err
	}
	p, err := c.Primary(ctx)
	if err != nil || p.Name == member {
		return err
	}
	if err := c.SetSyncStandbys(ctx, 2); err != nil {
		return err
	}
	if err := c.Switchover(ctx, member); err != nil {
		return err
	}
	return c.SetSyncStandbys(ctx, 1)
}

// createDatabase creates database name on the server behind dsn.
func createDatabase(ctx context.Context, dsn, name string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+name)
	return err
}

func patroniVersion(ctx context.Context) string {
	v, _ := patronilocal.Version(ctx)
	return v
}

// modelTable formats rows as Markdown, with the round trips per first
// run estimated from the change of its p50 between consecutive RTTs of
// the same region and placement.
func modelTable(rows []modelRow) string {
	var sb strings.Builder
	sb.WriteString("| region (primary) | coordinator's primary | RTT | first run p50 | p99 | replay p50 | p99 | writes per first run | per replay | cross-region round trips per first run (from the p50s) | per write |\n")
	sb.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for i, r := range rows {
		trips, perWrite := "", ""
		if i > 0 && rows[i-1].region == r.region && rows[i-1].placement == r.placement {
			d := pct(r.first, 50) - pct(rows[i-1].first, 50)
			k := d.Seconds() / (r.rtt - rows[i-1].rtt).Seconds()
			trips = fmt.Sprintf("%.1f", k)
			if r.writes > 0 {
				perWrite = fmt.Sprintf("%.1f", k/r.writes)
			}
		}
		fmt.Fprintf(&sb, "| %s | %s | %d ms | %s | %s | %s | %s | %.2f | %.2f | %s | %s |\n", r.region, r.placement, r.rtt.Milliseconds(),
			msOf(pct(r.first, 50)), msOf(pct(r.first, 99)), msOf(pct(r.replay, 50)), msOf(pct(r.replay, 99)), r.writes, r.rwrites, trips, perWrite)
	}
	return sb.String()
}

func msOf(d time.Duration) string {
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

// pct is the nearest-rank p-th percentile of ds.
func pct(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}
