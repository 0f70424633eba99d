//go:build drill

package drillpoint_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/internal/drillpoint"
)

// call sends one control request and returns its status and body.
func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// armed decodes a /crash answer.
func armed(t *testing.T, body string) []string {
	t.Helper()
	var r struct {
		Armed []string `json:"armed"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/crash answer %q: %v", body, err)
	}
	return r.Armed
}

// TestControlArmsAndDisarmsOnlyKnownPoints: PUT arms, DELETE disarms,
// GET lists (in request order); an unknown point is 400 naming the four
// known ones and arms nothing. Nothing reaches a point here: an armed Hit
// would kill the test binary.
func TestControlArmsAndDisarmsOnlyKnownPoints(t *testing.T) {
	srv := httptest.NewServer(drillpoint.Control(drillpoint.NewSkewClock(nil)))
	defer srv.Close()
	t.Cleanup(func() {
		for _, p := range drillpoint.Points() {
			drillpoint.Disarm(p)
		}
	})
	steps := []struct {
		method, path string
		status       int
		armed        []string
	}{
		{http.MethodGet, "/crash", 200, []string{}},
		{http.MethodPut, "/crash/during_commit", 200, []string{"during_commit"}},
		{http.MethodPut, "/crash/after_claim", 200, []string{"after_claim", "during_commit"}},
		{http.MethodPut, "/crash/after_claim", 200, []string{"after_claim", "during_commit"}},
		{http.MethodDelete, "/crash/during_commit", 200, []string{"after_claim"}},
		{http.MethodDelete, "/crash/before_finish", 200, []string{"after_claim"}},
		{http.MethodGet, "/crash", 200, []string{"after_claim"}},
	}
	for _, s := range steps {
		status, body := call(t, srv, s.method, s.path, "")
		if status != s.status || !slices.Equal(armed(t, body), s.armed) {
			t.Errorf("%s %s = %d %s; want %d armed %q", s.method, s.path, status, body, s.status, s.armed)
		}
	}
	for _, method := range []string{http.MethodPut, http.MethodDelete} {
		status, body := call(t, srv, method, "/crash/after_clam", "")
		if status != http.StatusBadRequest {
			t.Errorf("%s /crash/after_clam = %d %s; want 400", method, status, body)
		}
		for _, p := range drillpoint.Points() {
			if !strings.Contains(body, string(p)) {
				t.Errorf("%s /crash/after_clam: %s does not name %s", method, body, p)
			}
		}
	}
	if got := drillpoint.Armed(); !slices.Equal(got, []drillpoint.Point{drillpoint.AfterClaim}) {
		t.Errorf("Armed() = %q after the refused calls; want [after_claim]", got)
	}
	if status, body := call(t, srv, http.MethodGet, "/healthz", ""); status != 200 || body != "ok\n" {
		t.Errorf("GET /healthz = %d %q", status, body)
	}
}

// TestControlSkewsTheClock: PUT /clock/skew moves the clock's Now by the
// offset, GET reports it, "0s" undoes it; a body that is not a duration
// is 400 and leaves the offset as it was.
func TestControlSkewsTheClock(t *testing.T) {
	base := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	skew := drillpoint.NewSkewClock(base)
	srv := httptest.NewServer(drillpoint.Control(skew))
	defer srv.Close()
	type reply struct {
		Offset string    `json:"offset"`
		Now    time.Time `json:"now"`
	}
	decode := func(body string) reply {
		var r reply
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("skew answer %q: %v", body, err)
		}
		return r
	}
	for _, c := range []struct {
		body   string
		offset time.Duration
	}{
		{`{"offset":"-1500ms"}`, -1500 * time.Millisecond},
		{`{"offset":"2h"}`, 2 * time.Hour},
		{`{"offset":"0s"}`, 0},
	} {
		status, body := call(t, srv, http.MethodPut, "/clock/skew", c.body)
		if status != http.StatusOK || skew.Offset() != c.offset {
			t.Errorf("PUT %s = %d %s, offset now %v; want 200, %v", c.body, status, body, skew.Offset(), c.offset)
		}
		status, body = call(t, srv, http.MethodGet, "/clock/skew", "")
		got := decode(body)
		if status != http.StatusOK || got.Offset != c.offset.String() || !got.Now.Equal(base.Now().Add(c.offset)) {
			t.Errorf("GET /clock/skew = %d %s; want offset %v, now %v", status, body, c.offset, base.Now().Add(c.offset))
		}
	}
	skew.SetOffset(time.Minute)
	for _, bad := range []string{``, `{"offset":"soon"}`, `{"offset":1500}`, `{"skew":"1s"}`} {
		if status, body := call(t, srv, http.MethodPut, "/clock/skew", bad); status != http.StatusBadRequest {
			t.Errorf("PUT %q = %d %s; want 400", bad, status, body)
		}
	}
	if skew.Offset() != time.Minute {
		t.Errorf("offset %v after refused PUTs; want 1m0s unchanged", skew.Offset())
	}
}

// TestHitPassesUnarmedPoints: a point that is not armed lets the request
// go on (the process would be gone otherwise).
func TestHitPassesUnarmedPoints(t *testing.T) {
	if !drillpoint.Enabled {
		t.Fatal("drill build without Enabled")
	}
	for _, p := range drillpoint.Points() {
		drillpoint.Hit(p)
	}
}
