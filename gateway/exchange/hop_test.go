package exchange

import (
	"net/http"
	"strings"
	"testing"
)

// TestTheUpstreamGetsTheClientsHeadersLessHopByHopOnes: OutboundHeader
// is the client's headers cloned with each hop-by-hop one deleted, and
// adding to it never writes into the client's values; DropHopHeaders
// deletes what Del of each would.
func TestTheUpstreamGetsTheClientsHeadersLessHopByHopOnes(t *testing.T) {
	in := http.Header{"Authorization": {"Bearer x"}, "Connection": {"close"}, "Keep-Alive": {"1"},
		"Te": {"trailers"}, "Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "Proxy-Authorization": {"p"},
		"Proxy-Connection": {"k"}, "Trailer": {"T"}, "Proxy-Authenticate": {"a"}, "X-Many": {"1", "2"},
		"connection": {"not canonical, kept as Del keeps it"}}
	in["X-Many"] = append(make([]string, 0, 4), "1", "2") // room to append into
	want := in.Clone()
	for _, h := range hopHeaders {
		want.Del(h)
	}
	got := OutboundHeader(in, 3)
	if len(got) != len(want) {
		t.Fatalf("outbound %v, want %v", got, want)
	}
	for k, vs := range want {
		if strings.Join(got[k], "|") != strings.Join(vs, "|") {
			t.Errorf("%s: %q, want %q", k, got[k], vs)
		}
	}
	got.Add("X-Many", "3")
	if in2 := in["X-Many"]; len(in2) != 2 || in2[:3][2] == "3" {
		t.Errorf("adding to the outbound headers wrote into the client's: %q", in2[:3])
	}
	dropped := in.Clone()
	DropHopHeaders(dropped)
	if len(dropped) != len(want) {
		t.Errorf("DropHopHeaders left %v, want %v", dropped, want)
	}
}
