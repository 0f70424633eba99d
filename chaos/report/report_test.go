package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/validate"
)

const sec = int64(time.Second)

// synthetic is a 10-second run: us-east served actor a until it was killed
// at 4s; eu-west served a again at 5.5s; one violation with an excerpt.
func synthetic() Input {
	var ops []history.Operation
	add := func(op history.Operation) { op.Seq = int64(len(ops) + 1); ops = append(ops, op) }
	for i := int64(0); i < 10; i++ {
		served := "us-east"
		status := 201
		if i >= 4 {
			served = "eu-west"
		}
		if i == 4 || i == 5 {
			status, served = 503, ""
		}
		add(history.Operation{Kind: history.KindRequest, Call: i * sec, Return: i*sec + sec/2, Actor: "demo/a", Key: "k",
			Intent: i + 1, SentTo: "us-east", ServedBy: served, Status: status, Shard: 1})
	}
	add(history.Operation{Kind: history.KindFault, Call: 4 * sec, Return: 6 * sec, SentTo: "us-east", Shard: -1, Fault: "kill_region",
		Detail: "kill_region us-east for 2s"})
	res := validate.Result{Checked: map[validate.Invariant]int{validate.I1: 1, validate.I2: 1},
		Violations: []validate.Violation{{Invariant: validate.I2, KeyHash: history.KeyHash("k"), Shard: 1,
			Message: "acknowledged success with 2 charges in the ledger", Excerpt: ops[:1]}}}
	return Input{Scenario: "region-loss-reject", Seed: 42, History: history.History{Ops: ops}, Result: res}
}

func TestBuildComputesFiguresFromTheHistory(t *testing.T) {
	r := Build(synthetic())
	if r.Requests != 10 || r.Acked != 8 || r.Errors["503"] != 2 || r.Duplicates != 1 || r.Safe {
		t.Fatalf("figures: %+v", r)
	}
	if len(r.Timeline) != 10 || r.Timeline[4].Errors != 1 || r.Timeline[0].Acked != 1 {
		t.Fatalf("timeline: %+v", r.Timeline)
	}
	if len(r.Faults) != 1 || r.Faults[0].Rejected != 2 || r.Faults[0].RejectedNoRetryAfter != 2 {
		t.Fatalf("fault windows: %+v", r.Faults)
	}
	// Fault at 4s; the first success served by eu-west returned at 6.5s.
	if f := r.Faults[0].Failover; len(f) != 1 || f[0] != 2500*time.Millisecond {
		t.Fatalf("failover times = %v, want [2.5s]", f)
	}
}

func TestTextSummaryCarriesSeedInvariantAndExcerpt(t *testing.T) {
	var b bytes.Buffer
	if err := Build(synthetic()).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"seed 42: VIOLATIONS", "VIOLATION seed=42 I2", "duplicates 1", "failover", history.KeyHash("k")} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "key=k ") {
		t.Errorf("summary prints a raw key:\n%s", out)
	}
}

func writeHTML(t *testing.T) (string, string) {
	t.Helper()
	var b bytes.Buffer
	if err := Build(synthetic()).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, b.String()
}

func TestHTMLReportIsSelfContained(t *testing.T) {
	_, page := writeHTML(t)
	for _, want := range []string{`<svg id="timeline"`, `<polyline id="acked"`, `class="fault"`, `<table id="invariants"`,
		`class="violation"`, `FAIL (1)`} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if n := strings.Count(page, `<tr class="invariant">`); n != len(validate.Invariants) {
		t.Errorf("invariant table has %d rows, want %d", n, len(validate.Invariants))
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(page) || strings.Contains(page, "<script") {
		t.Error("report loads something from the network or runs a script")
	}
}

// TestHTMLReportRendersInChromium opens the report in headless Chromium
// and checks the rendered DOM holds the chart and the invariant table.
func TestHTMLReportRendersInChromium(t *testing.T) {
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed (Debian package chromium; .ci/run installs it): skipping the headless render")
	}
	path, _ := writeHTML(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+path)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	dom := string(out)
	if !regexp.MustCompile(`<svg[^>]*id="timeline"`).MatchString(dom) || !strings.Contains(dom, "<polyline") {
		t.Errorf("rendered DOM has no timeline chart:\n%.2000s", dom)
	}
	if !regexp.MustCompile(`<table[^>]*id="invariants"`).MatchString(dom) || strings.Count(dom, `class="invariant"`) != len(validate.Invariants) {
		t.Errorf("rendered DOM has no full invariant table:\n%.2000s", dom)
	}
}

func TestFailoverIsMeasuredOnlyForFaultsThatTakeARegionOut(t *testing.T) {
	in := synthetic()
	for i, op := range in.History.Ops {
		if op.Kind == history.KindFault {
			in.History.Ops[i].Fault = "latency"
		}
	}
	if f := Build(in).Faults[0].Failover; len(f) != 0 {
		t.Errorf("failover times %v for a latency fault, want none", f)
	}
	in = synthetic()
	for i, op := range in.History.Ops {
		if op.Kind == history.KindFault {
			in.History.Ops[i].Skipped = true
		}
	}
	if f := Build(in).Faults[0].Failover; len(f) != 0 {
		t.Errorf("failover times %v for a fault that was not injected, want none", f)
	}
}

// TestHTMLReportSaysWhatItShows: the chart has axis titles with units and
// labels each fault window as the fault table does; errors are broken
// down by class; durations are rounded; each "checked" count has its unit
// and each invariant links to its definition in the page; the coverage
// counters that come from the drill's probes are marked; the page says
// what GREEN requires and carries the run's metadata, its client mode
// included (direct when the input names none).
func TestHTMLReportSaysWhatItShows(t *testing.T) {
	_, page := writeHTML(t)
	for _, want := range []string{
		`time since the drill started (seconds)`, `requests per second`,
		`class="fault-label"`, `>F1</text>`, `<td>F1</td>`, `from the fault's injection until it was healed`,
		`<table id="errors-by-class">`, `<td>503</td><td class="n">2</td>`,
		`<td class="n">1 keys</td>`, `<a href="#def-I1">I1</a>`, `<dt id="def-I1">`, `<dt id="def-liveness">`,
		`stale-epoch write rejected &dagger;`, `counted from the drill's own probes`,
		`GREEN requires both`, `<dt>replay with</dt>`, `<dt>commit</dt>`, `<dt>cluster</dt>`, `<dt>build</dt>`, `<dt>seed</dt><dd>42 `, `<dt>run length</dt><dd>9.5s `,
		`<dt>clients</dt><dd>direct (`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`\d+\.\d{4,}(ms|µs|s)`).FindString(page); m != "" {
		t.Errorf("report shows an unrounded duration %q", m)
	}
}

// TestTheReportHeaderAndNotesReadForAPerson: the header shows the command
// that replays the run (not the process's own path), the commit and the
// kind of cluster; the in-flight figure is explained; in the direct
// client mode, a note says that calls sent to the lost region's address
// count as unavailable and points to the sdk and entry modes, and in
// those modes it is left out.
func TestTheReportHeaderAndNotesReadForAPerson(t *testing.T) {
	page := func(client string) string {
		in := synthetic()
		in.Client = client
		r := Build(in)
		r.Meta.Command = "idemctl drill run --scenario region-loss-reject --seed 42"
		r.Meta.Commit, r.Meta.Cluster = "0123abc+modified", "process"
		var b bytes.Buffer
		if err := r.WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	direct := page("")
	for _, want := range []string{`<code id="command">idemctl drill run --scenario region-loss-reject --seed 42</code>`,
		`<code>0123abc`, `process: one idemd process per region`,
		`id="in-flight-note"`, `id="direct-mode"`, "counts as unavailable", "--client sdk", "--client entry"} {
		if !strings.Contains(direct, want) {
			t.Errorf("direct-mode report lacks %q", want)
		}
	}
	if sdk := page("sdk"); strings.Contains(sdk, `id="direct-mode"`) || !strings.Contains(sdk, `id="in-flight-note"`) {
		t.Errorf("sdk-mode report: the direct-mode note is there, or the in-flight note is not")
	}
}

// TestTheTimelinePlotsTheDrillNotTheRecheckOfAcknowledgedAnswers: the
// drill's last phase re-sends every acknowledged answer at once (a burst
// of replays many times the workload's rate); the timeline plots the
// drill's own traffic, so that burst neither sets its scale nor adds
// seconds to it. The request counts still include it.
func TestTheTimelinePlotsTheDrillNotTheRecheckOfAcknowledgedAnswers(t *testing.T) {
	in := synthetic()
	for i := range 500 {
		in.History.Ops = append(in.History.Ops, history.Operation{Seq: int64(100 + i), Kind: history.KindRequest,
			Call: 12 * sec, Return: 12*sec + sec/4, Actor: "demo/a", Key: "k", Intent: 1, SentTo: "us-east",
			ServedBy: "us-east", Status: 201, Replayed: true, AckReplay: true, Shard: 1})
	}
	r := Build(in)
	if r.Requests != 510 {
		t.Errorf("requests = %d, want 510: the recheck's attempts are requests too", r.Requests)
	}
	if len(r.Timeline) != 10 {
		t.Fatalf("timeline has %d seconds, want the drill's 10: %+v", len(r.Timeline), r.Timeline)
	}
	for _, s := range r.Timeline {
		if s.Acked > 1 {
			t.Errorf("second %d plots %d acknowledged, want the drill's own (at most 1)", s.At, s.Acked)
		}
	}
}
