package gateway

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// answerTransport answers every request with a new resp (a copy of its
// status, headers, length and body text, nil body if none) or err.
type answerTransport struct {
	resp *http.Response
	body string
	err  error
}

func (t answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	if t.resp == nil {
		return nil, t.err
	}
	resp := *t.resp
	if t.body != "" {
		resp.Body = io.NopCloser(strings.NewReader(t.body))
	}
	return &resp, t.err
}

// TestTheProxySendsAsItsHTTPClientDid: roundTrip, which sends without
// http.Client, answers as that client (no jar, no timeout, redirects
// returned) answered, for every transport: the same *url.Error (its Op,
// its URL with the password hidden, the transport's error within), the
// same refusal of a nil answer or of a nil body with a length, an empty
// body for a nil one without, and a redirect returned as it is.
func TestTheProxySendsAsItsHTTPClientDid(t *testing.T) {
	client := func(rt http.RoundTripper) *http.Client {
		return &http.Client{Transport: rt,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		rt   answerTransport
	}{
		{"error", answerTransport{err: boom}},
		{"nil answer", answerTransport{}},
		{"nil body with a length", answerTransport{resp: &http.Response{StatusCode: 201, ContentLength: 3, Header: http.Header{}}}},
		{"nil body", answerTransport{resp: &http.Response{StatusCode: 204, Header: http.Header{}}}},
		{"redirect", answerTransport{resp: &http.Response{StatusCode: 307, Header: http.Header{"Location": {"/x"}}},
			body: "moved"}},
	} {
		for _, method := range []string{"POST", "GET", "HEAD", "patch"} {
			u, _ := url.Parse("http://user:secret@up.example/v1/things?q=1")
			req := func() *http.Request {
				r, _ := http.NewRequest(method, u.String(), io.NopCloser(strings.NewReader("{}")))
				return r
			}
			want, wantErr := client(tc.rt).Do(req())
			got, gotErr := roundTrip(tc.rt, req())
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Errorf("%s, %s: error %v, the client's %v", tc.name, method, gotErr, wantErr)
				continue
			}
			if wantErr != nil {
				if errors.Is(wantErr, boom) != errors.Is(gotErr, boom) {
					t.Errorf("%s, %s: the transport's error is not within %v", tc.name, method, gotErr)
				}
				continue
			}
			wb, _ := io.ReadAll(want.Body)
			gb, _ := io.ReadAll(got.Body)
			if got.StatusCode != want.StatusCode || string(gb) != string(wb) {
				t.Errorf("%s, %s: %d %q, the client's %d %q", tc.name, method, got.StatusCode, gb, want.StatusCode, wb)
			}
		}
	}
}
