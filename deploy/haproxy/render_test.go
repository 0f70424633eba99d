package haproxy

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite haproxy.cfg from the template")

// example is what haproxy.cfg, the file beside this one, is rendered
// from: three regions behind one entry on port 8080.
var example = Config{
	Listen: ":8080",
	Regions: []Region{
		{Name: "us-east", Addr: "idemd.us-east.internal:8080"},
		{Name: "eu-west", Addr: "idemd.eu-west.internal:8080"},
		{Name: "ap-south", Addr: "idemd.ap-south.internal:8080"},
	},
	AdminSocket: "/run/haproxy/admin.sock",
}

// TestShippedConfigIsTheTemplatesRendering: deploy/haproxy/haproxy.cfg is
// exactly what Render makes of the example regions, so the file an
// operator copies and the one the dev cluster runs never drift apart; and
// haproxy itself accepts it (when installed).
func TestShippedConfigIsTheTemplatesRendering(t *testing.T) {
	got, err := Render(example)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("haproxy.cfg", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("haproxy.cfg differs from the template's rendering; run go test ./deploy/haproxy -run Shipped -args -update")
	}
	checkLoads(t, got)
}

// checkLoads runs `haproxy -c` on a configuration.
func checkLoads(t *testing.T, cfg []byte) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Skip(err)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	// The admin socket's directory may not exist here; the check is of
	// the rest.
	cfg = bytes.ReplaceAll(cfg, []byte("/run/haproxy/admin.sock"), []byte(filepath.Join(t.TempDir(), "a.sock")))
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

// TestConfigResendsAWrittenRequestOnlyUnderItsKey: the rendered backend
// retries on conn-failure (the request could not be sent) and on
// response-timeout (the region read it and went silent), turns every
// retry but conn-failure off for a request without an Idempotency-Key,
// never retries on an answer (empty, junk or a status), and nothing shuts
// down a region's sessions when it is marked down (which would cut
// requests that are running there).
func TestConfigResendsAWrittenRequestOnlyUnderItsKey(t *testing.T) {
	got, err := Render(example)
	if err != nil {
		t.Fatal(err)
	}
	var retryOn, disable []string
	for _, line := range strings.Split(string(got), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "retry-on":
			retryOn = append(retryOn, strings.Join(f[1:], " "))
		case len(f) > 1 && f[0] == "http-request" && f[1] == "disable-l7-retry":
			disable = append(disable, strings.Join(f[2:], " "))
		}
	}
	if len(retryOn) != 1 || retryOn[0] != "conn-failure response-timeout" {
		t.Fatalf("retry-on lines %q; want exactly one, conn-failure response-timeout", retryOn)
	}
	if len(disable) != 1 || disable[0] != "if !{ req.hdr(Idempotency-Key) -m found }" {
		t.Fatalf("disable-l7-retry rules %q; want exactly one, for every request without an Idempotency-Key", disable)
	}
	for _, bad := range []string{"empty-response", "junk-response", "all-retryable-errors", "shutdown-sessions", "http-request-retry", "retry-on 5", "retry-on 4"} {
		for _, line := range strings.Split(string(got), "\n") {
			if l := strings.TrimSpace(line); !strings.HasPrefix(l, "#") && strings.Contains(l, bad) {
				t.Fatalf("the configuration uses %q: %s", bad, l)
			}
		}
	}
}

// TestTheServerTimeoutFollowsTheEndpointsUpstreamTimeout: with the
// endpoints' upstream timeout given, a region's silence is cut at that
// timeout plus AnswerSlack; without it, at DefaultServerTimeout; an
// explicit ServerTimeout wins.
func TestTheServerTimeoutFollowsTheEndpointsUpstreamTimeout(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want time.Duration
	}{
		{Config{}, DefaultServerTimeout},
		{Config{UpstreamTimeout: 1500 * time.Millisecond}, 3500 * time.Millisecond},
		{Config{UpstreamTimeout: time.Second, ServerTimeout: 9 * time.Second}, 9 * time.Second},
	} {
		if got := tc.cfg.withDefaults().ServerTimeout; got != tc.want {
			t.Errorf("%+v: ServerTimeout %v, want %v", tc.cfg, got, tc.want)
		}
	}
	if _, err := Render(Config{Listen: ":80", Regions: example.Regions, UpstreamTimeout: -time.Second}); err == nil || !strings.Contains(err.Error(), "UpstreamTimeout") {
		t.Errorf("a negative UpstreamTimeout: %v, want an error naming it", err)
	}
}

// TestConfigRefusesBadInputNamingTheField: Render names what is wrong.
func TestConfigRefusesBadInputNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Regions: example.Regions}, "Listen"},
		{Config{Listen: ":80"}, "Regions"},
		{Config{Listen: ":80", Regions: []Region{{Name: "US", Addr: "a:1"}}}, "Regions[0].Name"},
		{Config{Listen: ":80", Regions: []Region{{Name: "us", Addr: "a:1"}, {Name: "us", Addr: "b:1"}}}, "Regions[1].Name"},
		{Config{Listen: ":80", Regions: []Region{{Name: "us", Addr: "nohost"}}}, "Regions[0].Addr"},
		{Config{Listen: ":80", Regions: example.Regions, CheckInterval: -1}, "CheckInterval"},
	} {
		if _, err := Render(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Render(%+v) = %v; want an error naming %s", tc.cfg, err, tc.want)
		}
	}
}

// TestASilentRegionIsOutBeforeAKeyedRequestSentToItIsSentAgain: with the
// default checks, a region that stops answering (a paused process, which
// still accepts connections) is out of the rotation before the least
// server timeout an upstream timeout gives (its slack alone) has passed,
// so the keyed retry of a request it swallowed when it stopped cannot go
// back to it. (At 1 s check timeouts it took up to 2.75 s, and drills saw
// retries go to a paused region that was still in: 7 s calls.)
func TestASilentRegionIsOutBeforeAKeyedRequestSentToItIsSentAgain(t *testing.T) {
	c := Config{Listen: "127.0.0.1:80", Regions: example.Regions, UpstreamTimeout: time.Millisecond}
	out := SilentOutWithin(c)
	if d := c.withDefaults(); out >= d.ServerTimeout || out >= AnswerSlack {
		t.Errorf("a silent region stays in for up to %v; want it out before %v (the least derived server timeout's slack)", out, AnswerSlack)
	}
	cfg, err := Render(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"timeout check 500ms", "inter 500ms fastinter 250ms", "fall 2 rise 2"} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("rendered configuration lacks %q, which SilentOutWithin assumes", want)
		}
	}
}
