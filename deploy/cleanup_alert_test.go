package deploy_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	promqlengine "github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// alertRule returns the expression and hold time of the alert name in
// rules.yaml.
func alertRule(t *testing.T, name string) (string, time.Duration) {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r.Expr, time.Duration(r.For)
			}
		}
	}
	t.Fatalf("no alert %s in %s", name, rulesFile)
	return "", 0
}

// sample is one float sample.
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) ST() int64                     { return 0 }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s sample) Copy() chunks.Sample           { return s }

// seriesSet lists series in memory.
type seriesSet struct {
	s []storage.Series
	i int
}

func (ss *seriesSet) Next() bool                        { ss.i++; return ss.i <= len(ss.s) }
func (ss *seriesSet) At() storage.Series                { return ss.s[ss.i-1] }
func (ss *seriesSet) Err() error                        { return nil }
func (ss *seriesSet) Warnings() annotations.Annotations { return nil }

// scrapes is a queryable of one instance's two cleanup series in region
// r1, scraped every 30 s for 120 minutes: backlog(m) and the deleted
// counter's rate per second deletes(m), m in minutes.
func scrapes(backlog, deletes func(m float64) float64) storage.Queryable {
	lbl := func(name string) labels.Labels {
		return labels.FromStrings("__name__", name, "region", "r1", "instance", "a")
	}
	var b, d []chunks.Sample
	total := 0.0
	for s := 0; s <= 120*60; s += 30 {
		m := float64(s) / 60
		total += deletes(m) * 30
		b = append(b, sample{int64(s) * 1000, backlog(m)})
		d = append(d, sample{int64(s) * 1000, total})
	}
	all := []storage.Series{storage.NewListSeries(lbl("idemcoord_cleanup_backlog"), b),
		storage.NewListSeries(lbl("idemcoord_cleanup_deleted_total"), d)}
	return &storage.MockQueryable{MockQuerier: &storage.MockQuerier{
		SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
			var out []storage.Series
			for _, s := range all {
				ok := true
				for _, m := range ms {
					ok = ok && m.Matches(s.Labels().Get(m.Name))
				}
				if ok {
					out = append(out, s)
				}
			}
			return &seriesSet{s: out}
		}}}
}

// fires reports whether expr held at every rule evaluation (each minute)
// of the hold time ending at 120 minutes: whether Prometheus would fire
// the alert.
func fires(t *testing.T, expr string, hold time.Duration, q storage.Queryable) bool {
	t.Helper()
	eng := promqlengine.NewEngine(promqlengine.EngineOpts{MaxSamples: 1000000, Timeout: time.Minute,
		LookbackDelta: 5 * time.Minute})
	end := time.Unix(0, 0).Add(120 * time.Minute)
	for at := end.Add(-hold); !at.After(end); at = at.Add(time.Minute) {
		qy, err := eng.NewInstantQuery(context.Background(), q, nil, expr, at)
		if err != nil {
			t.Fatal(err)
		}
		res := qy.Exec(context.Background())
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		v, err := res.Vector()
		if err != nil {
			t.Fatal(err)
		}
		qy.Close()
		if len(v) == 0 {
			return false
		}
	}
	return true
}

// TestCleanupAlertFiresWheneverTheBacklogGrowsWhateverTheDeleteRate: a
// backlog that keeps growing, or that sits at the gauge's cap (the count
// is bounded: sqlstore.DefaultStatsLimit, 100000), means cleanup does not
// keep up however many records a second it deletes. The alert fires then,
// and stays quiet while each pass drains the backlog.
func TestCleanupAlertFiresWheneverTheBacklogGrowsWhateverTheDeleteRate(t *testing.T) {
	expr, hold := alertRule(t, "IdemcoordCleanupFallingBehind")
	rate := func(r float64) func(float64) float64 { return func(float64) float64 { return r } }
	// sawtooth: cleanup's pass every interval minutes drains what expired.
	sawtooth := func(interval, perMinute float64) func(float64) float64 {
		return func(m float64) float64 {
			return (m - interval*float64(int(m/interval))) * perMinute
		}
	}
	for _, tt := range []struct {
		name             string
		backlog, deletes func(float64) float64
		fire             bool
	}{
		{"at the count's cap while 500 records/s are deleted",
			func(float64) float64 { return 100000 }, rate(500), true},
		{"growing 1,000 a minute while 200 records/s are deleted",
			func(m float64) float64 { return 5000 + 1000*m }, rate(200), true},
		{"growing 100 a minute while 20 records/s are deleted",
			func(m float64) float64 { return 2000 + 100*m }, rate(20), true},
		{"at the count's cap and nothing deleted",
			func(float64) float64 { return 100000 }, rate(0), true},
		{"each pass drains it, busy region (1,000 expire a second)", sawtooth(1, 60000), rate(1000), false},
		{"each pass drains it, quiet region", sawtooth(1, 300), rate(5), false},
		{"a small steady backlog", func(float64) float64 { return 800 }, rate(10), false},
	} {
		if got := fires(t, expr, hold, scrapes(tt.backlog, tt.deletes)); got != tt.fire {
			t.Errorf("backlog %s: fires = %v, want %v", tt.name, got, tt.fire)
		}
	}
}
