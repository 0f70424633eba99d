//go:build linux

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/deploy/haproxy"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// startEntry runs the global entry (real haproxy) in front of every
// region of c, its request log in the returned buffer; it stops when the
// test ends. Skips when haproxy is not installed.
func startEntry(t *testing.T, c *devcluster.Cluster) (*haproxy.Entry, *testutil.LogBuffer) {
	t.Helper()
	if _, err := haproxy.Binary(); err != nil {
		t.Skip(err)
	}
	cfg := haproxy.Config{Listen: "127.0.0.1:0", ServerTimeout: 30 * time.Second}
	for _, r := range c.Topology {
		reg, err := haproxy.RegionFromURL(r.Name, r.URL)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Regions = append(cfg.Regions, reg)
	}
	logs := &testutil.LogBuffer{}
	e, err := haproxy.Start(t.Context(), cfg, logs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		if t.Failed() {
			t.Logf("haproxy log:\n%s", logs.Bytes())
		}
	})
	return e, logs
}

// entryLog is one request's line in the entry's log (see the template's
// log-format), found by its X-Request-Id.
type entryLog struct {
	server, status, termination, retries string
}

func findEntryLog(t *testing.T, logs *testutil.LogBuffer, requestID string) (entryLog, bool) {
	t.Helper()
	for _, line := range strings.Split(string(logs.Bytes()), "\n") {
		f := strings.Fields(line)
		if len(f) < 11 || f[10] != "{"+requestID+"}" {
			continue
		}
		counts := strings.Split(f[8], "/")
		return entryLog{server: f[3], status: f[5], termination: f[7], retries: counts[len(counts)-1]}, true
	}
	return entryLog{}, false
}

// waitEntryLog polls for a request's log line (haproxy writes it when the
// request ends).
func waitEntryLog(t *testing.T, logs *testutil.LogBuffer, requestID string) entryLog {
	t.Helper()
	var l entryLog
	testutil.Eventually(t, 2*time.Second, func() error {
		var ok bool
		if l, ok = findEntryLog(t, logs, requestID); !ok {
			return fmt.Errorf("no entry log line for request %s", requestID)
		}
		return nil
	})
	return l
}

// TestEntryTakesAKilledRegionOutAndNeverResendsItsInFlightPost: the
// global entry (real haproxy) fronts the three regions, us-east being a
// real idemd process. A payment of a us-east actor is sent through the
// entry to us-east, and us-east is SIGKILLed while the bank sits on the
// charge. The entry answers that request 502 (the region closed the
// connection; it may have run) and does not resend it: its log shows the
// request went to us-east with no retry, and the bank has one charge.
// Meanwhile intents of an eu-west actor sent through the entry keep
// succeeding, every one of them, and the entry marks us-east down; the
// time from the kill to that is logged.
func TestEntryTakesAKilledRegionOutAndNeverResendsItsInFlightPost(t *testing.T) {
	c := startCluster(t, devcluster.Options{})
	us := regionProcess(t, c, "entry-us-0", "reject")
	e, logs := startEntry(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	waitUp(t, ctx, e, map[string]bool{"us-east": true, "eu-west": true, "ap-south": true})

	// The in-flight request must land in us-east: the other regions are
	// drained while it is sent, and ready again before the kill, so that
	// the entry could resend it there if it ever did.
	others := []string{"eu-west", "ap-south"}
	setStates := func(state string) {
		t.Helper()
		for _, r := range others {
			if err := e.SetState(ctx, r, state); err != nil {
				t.Fatal(err)
			}
		}
	}
	setStates("drain")
	usActor := c.ActorHomedIn("us-east", uniqueName("entry-us"))
	usTok := token(t, c, usActor)
	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: procBankDelay}); err != nil {
		t.Fatal(err)
	}
	inflightID := uniqueName("entry-inflight")
	inflight := make(chan reply, 1)
	go func() {
		r, err := send(ctx, http.MethodPost, e.URL+"/v1/payments", usTok,
			map[string]string{"Idempotency-Key": uniqueName("entry-key"), "X-Request-Id": inflightID}, paymentBody("3.00", "entry"))
		if err != nil {
			t.Errorf("in-flight POST through the entry: %v", err)
		}
		inflight <- r
	}()
	waitOperationOf(t, c, "bank charge", `SELECT operation_id FROM bank_charges WHERE actor = $1`, scope(usActor), 10*time.Second)
	setStates("ready")
	waitUp(t, ctx, e, map[string]bool{"us-east": true, "eu-west": true, "ap-south": true})
	kill(t, us)
	killed := time.Now()
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}

	// Intents of an eu-west actor keep succeeding through the entry.
	euActor := c.ActorHomedIn("eu-west", uniqueName("entry-eu"))
	euTok := token(t, c, euActor)
	var markedDown time.Duration
	sent := 0
	for time.Since(killed) < 3*time.Second || markedDown == 0 {
		if time.Since(killed) > 20*time.Second {
			t.Fatal("the entry did not mark us-east down within 20 s of the kill")
		}
		r := mustPost(t, e.URL, euTok, uniqueName("entry-eu-key"), paymentBody("1.00", "eu"))
		sent++
		if r.Status != http.StatusCreated {
			t.Fatalf("intent %d through the entry %v after the kill: %v; want 201", sent, time.Since(killed).Round(time.Millisecond), r)
		}
		if markedDown == 0 {
			if up, err := e.Up(ctx); err == nil && !up["us-east"] {
				markedDown = time.Since(killed)
			}
		}
	}
	t.Logf("the entry marked us-east down %v after the kill; %d intents of an eu-west actor sent through it meanwhile, all 201",
		markedDown.Round(time.Millisecond), sent)

	r := <-inflight
	l := waitEntryLog(t, logs, inflightID)
	if l.server != "regions/us-east" || l.retries != "0" || strings.Count(string(logs.Bytes()), "{"+inflightID+"}") != 1 {
		t.Fatalf("in-flight POST logged as %+v; want sent to us-east once, no retry", l)
	}
	if r.Status != http.StatusBadGateway || !strings.Contains(string(r.Body), "region-answer-lost") {
		t.Fatalf("in-flight POST answered %v; want the entry's 502 region-answer-lost", r)
	}
	if rows, charges := (ledger{t, c}).byActor(scope(usActor)); rows != 1 || charges != 1 {
		t.Fatalf("the us-east actor has %d payments and %d charges; want 1 and 1", rows, charges)
	}
}

// waitUp polls the entry's admin socket until the regions' states are
// want.
func waitUp(t *testing.T, ctx context.Context, e *haproxy.Entry, want map[string]bool) {
	t.Helper()
	var got map[string]bool
	var err error
	if testutil.PollEvery(5*time.Second, 25*time.Millisecond, testutil.Cond(func() bool {
		got, err = e.Up(ctx)
		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	})) != nil {
		t.Fatalf("entry server states %v (%v); want %v", got, err, want)
	}
}
