package failover_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/failover"
	"github.com/idemcoord/idemcoord/internal/testutil"
	"github.com/idemcoord/idemcoord/region"
)

// deadURL is the base URL of a region whose process is gone: every
// connection is refused.
func deadURL(t *testing.T) string { return "http://" + testutil.RefusingAddr(t) }

// closingURL is the base URL of a TCP proxy in front of a dead process
// (the drills' peer links): it accepts, then closes without a byte.
func closingURL(t *testing.T) string { return "http://" + testutil.ClosingAddr(t) }

// stalledURL is the base URL of a paused process: its kernel accepts
// connections, nothing ever answers.
func stalledURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String() // never accepted: the backlog holds the connection
}

// answeringURL is the base URL of a live instance that lost its liveness
// key (an etcd hiccup): it answers, here with a 503.
func answeringURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// cutOffHealthz answers /healthz as an instance that knows it cannot reach
// etcd does (gateway's /healthz with Config.CutOff true), with status.
func cutOffHealthz(status int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set(failover.HeaderEtcd, failover.EtcdUnreachable)
		w.WriteHeader(status)
	})
}

// cutOffURL is the base URL of a live instance cut off from etcd: it
// answers /healthz, and says it cannot reach etcd.
func cutOffURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(cutOffHealthz(http.StatusOK))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestPeerProbeFindsARegionDownOnARefusedOrClosedConnectionSilentWhenNothingAnswersAndCutOffOnlyWhenItSaysSo(t *testing.T) {
	for _, tc := range []struct {
		name  string
		url   func(*testing.T) string
		found failover.Finding
	}{
		{"refused", deadURL, failover.Down},
		{"closed before any answer", closingURL, failover.Down},
		{"accepted, never answered (paused)", stalledURL, failover.Silent},
		{"answered, even an error", answeringURL, failover.Unproven},
		{"answered that it cannot reach etcd", cutOffURL, failover.CutOff},
		{"the etcd header on an answer other than 200", func(t *testing.T) string {
			srv := httptest.NewServer(cutOffHealthz(http.StatusServiceUnavailable))
			t.Cleanup(srv.Close)
			return srv.URL
		}, failover.Unproven},
		{"https, closed before the handshake", func(t *testing.T) string { return "https" + strings.TrimPrefix(closingURL(t), "http") }, failover.Down},
		{"https, accepted, no handshake (paused)", func(t *testing.T) string { return "https" + strings.TrimPrefix(stalledURL(t), "http") }, failover.Silent},
		{"https, a handshake (even one the probe does not trust)", func(t *testing.T) string {
			srv := httptest.NewTLSServer(cutOffHealthz(http.StatusOK))
			t.Cleanup(srv.Close)
			return srv.URL
		}, failover.Unproven},
		{"unknown region", func(*testing.T) string { return "" }, failover.Unproven},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.url(t)
			p := failover.PeerProbe{URL: func(string) (string, error) {
				if u == "" {
					return "", region.ErrUnknownRegion
				}
				return u, nil
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			if got := p.Probe(ctx, "us-east"); got != tc.found {
				t.Fatalf("Probe = %s, want %s", got, tc.found)
			}
		})
	}
}

// A silence proves a stopped process only when the probe waited the
// whole window: a probe whose own time ends first, a window turned off,
// or a process that began to answer and then stalls prove nothing.
func TestPeerProbeFindsARegionSilentOnlyWhenItsWholeWindowPassesWithoutAByte(t *testing.T) {
	// The daemon's window is half its confirmation delay: a delay chosen
	// to ride out long stalls (over 2 s) outlasts every probe (at most
	// 1 s), so a silence never cuts it short.
	for confirm, want := range map[time.Duration]time.Duration{0: 250 * time.Millisecond,
		time.Second: 500 * time.Millisecond, 5 * time.Second: 2500 * time.Millisecond} {
		if got := failover.ProbeSilenceFor(confirm); got != want {
			t.Errorf("ProbeSilenceFor(%s) = %s, want %s", confirm, got, want)
		}
	}
	// answersThenStalls begins an answer (the process runs) and never
	// ends it.
	answersThenStalls := func(t *testing.T) string {
		t.Helper()
		done := make(chan struct{})
		t.Cleanup(func() { close(done) })
		return "http://" + testutil.RawAddr(t, func(c net.Conn) {
			defer c.Close()
			c.Read(make([]byte, 512))
			c.Write([]byte("HTTP/1.1 200"))
			<-done
		})
	}
	for _, tc := range []struct {
		name    string
		url     func(*testing.T) string
		silence time.Duration
		timeout time.Duration
	}{
		{"the probe's time ends inside the window", stalledURL, failover.ProbeSilenceFor(5 * time.Second), 200 * time.Millisecond},
		{"the window turned off", stalledURL, -1, 200 * time.Millisecond},
		{"a byte came, then nothing", answersThenStalls, 10 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := tc.url(t)
			p := failover.PeerProbe{URL: func(string) (string, error) { return u, nil }, Silence: tc.silence}
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			if got := p.Probe(ctx, "us-east"); got != failover.Unproven {
				t.Fatalf("Probe = %s, want %s", got, failover.Unproven)
			}
		})
	}
}

// An https peer that the probe trusts is read as an http one: here it
// says it cannot reach etcd.
func TestPeerProbeReadsATrustedHTTPSPeersHealthz(t *testing.T) {
	srv := httptest.NewTLSServer(cutOffHealthz(http.StatusOK))
	t.Cleanup(srv.Close)
	p := failover.PeerProbe{URL: func(string) (string, error) { return srv.URL, nil },
		TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if got := p.Probe(ctx, "us-east"); got != failover.CutOff {
		t.Fatalf("Probe = %s, want cut_off", got)
	}
}

// probeResults is a Prober that reports each result of the PeerProbe it
// wraps on results.
type probeResults struct {
	p       failover.PeerProbe
	results chan failover.Finding
}

func (r probeResults) Probe(ctx context.Context, region string) failover.Finding {
	f := r.p.Probe(ctx, region)
	r.results <- f
	return f
}

// probedTracker returns a tracker whose confirmation delay never falls due
// unless the test moves the clock, probing us-east at usEast, and the
// channel of its probes' results.
func probedTracker(t *testing.T, usEast string) (*failover.Tracker, *clock.Fake, chan failover.Finding, string) {
	t.Helper()
	var rs []config.Region
	for _, n := range regions {
		u := "http://" + n + ".invalid"
		if n == "us-east" {
			u = usEast
		}
		rs = append(rs, config.Region{Name: n, URL: u})
	}
	topo, err := region.New(regions[1], rs)
	if err != nil {
		t.Fatal(err)
	}
	cli, pfx := client(t), prefix(t)
	fake := clock.NewFake(epoch0())
	results := make(chan failover.Finding, 4)
	tr, err := failover.NewTracker(failover.Config{Client: cli, Topology: topo, Prefix: pfx,
		ConfirmDelay: time.Hour, Clock: fake, Logger: quiet(),
		Probe: probeResults{p: failover.PeerProbe{URL: topo.URL}, results: results}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	a := instance(t, cli, pfx, "us-east", "a")
	if states, err := tr.Refresh(ctxT(t)); err != nil || states["us-east"] != failover.Healthy {
		t.Fatalf("us-east %s (%v), want healthy", states["us-east"], err)
	}
	a.kill()
	return tr, fake, results, pfx
}

// TestARegionThatIsGoneCutOffOrStoppedIsFailedWithoutTheConfirmationDelay:
// a killed region's process holds no socket; once its key is gone, the
// probe's refused connection fails it at once, as a clean stop does; so
// does an instance that says it cannot reach etcd, and a stopped (paused)
// process, whose kernel accepts and which answers nothing. The clock
// never moves here, and the confirmation delay is an hour.
func TestARegionThatIsGoneCutOffOrStoppedIsFailedWithoutTheConfirmationDelay(t *testing.T) {
	for name, url := range map[string]func(*testing.T) string{"refused": deadURL, "closed by a proxy": closingURL, "cut off from etcd": cutOffURL, "paused": stalledURL} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			tr, _, results, _ := probedTracker(t, url(t))
			changed := tr.Changed()
			if states, err := tr.Refresh(ctx); err != nil || states["us-east"] != failover.Suspect {
				t.Fatalf("us-east %s (%v), want suspect", states["us-east"], err)
			}
			if found := <-results; found == failover.Unproven {
				t.Fatal("the probe found no evidence")
			}
			for tr.State("us-east") != failover.Failed {
				select {
				case <-changed:
					changed = tr.Changed()
				case <-ctx.Done():
					t.Fatalf("us-east stayed %s after the probe found it down, want failed", tr.State("us-east"))
				}
			}
		})
	}
}

// TestASuspectRegionWhoseInstanceAnswersWaitsForTheConfirmationDelay:
// a running instance that lost its key (it answers) is no evidence of
// death: the region stays suspect until the confirmation delay runs out,
// so the instance can register again.
func TestASuspectRegionWhoseInstanceAnswersWaitsForTheConfirmationDelay(t *testing.T) {
	for name, url := range map[string]func(*testing.T) string{"answering": answeringURL} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			tr, fake, results, _ := probedTracker(t, url(t))
			if states, err := tr.Refresh(ctx); err != nil || states["us-east"] != failover.Suspect {
				t.Fatalf("us-east %s (%v), want suspect", states["us-east"], err)
			}
			if found := <-results; found != failover.Unproven {
				t.Fatalf("the probe found a region that accepts connections %s", found)
			}
			if states, err := tr.Refresh(ctx); err != nil || states["us-east"] != failover.Suspect {
				t.Fatalf("us-east %s (%v) after the probe, want still suspect", states["us-east"], err)
			}
			select {
			case d := <-results:
				t.Fatalf("probed again (%v) in the same suspect period", d)
			default:
			}
			fake.Advance(time.Hour)
			if states, err := tr.Refresh(ctx); err != nil || states["us-east"] != failover.Failed {
				t.Fatalf("us-east %s (%v) after the confirmation delay, want failed", states["us-east"], err)
			}
		})
	}
}
