package upstream

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// answerTransport answers every request with a new resp (a copy of its
// status, headers, length and body text, nil body if none) or err.
type answerTransport struct {
	resp *http.Response
	body string
	err  error
	// auth, if set, gets the Authorization header of each request.
	auth *[]string
}

func (t answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		r.Body.Close()
	}
	if t.auth != nil {
		*t.auth = append(*t.auth, r.Header.Get("Authorization"))
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
// body for a nil one without, a redirect returned as it is unless the
// client would have followed it and could not read its Location, and the
// upstream URL's credentials sent as Basic authorization when the request
// has none.
func TestTheProxySendsAsItsHTTPClientDid(t *testing.T) {
	client := func(rt http.RoundTripper) *http.Client {
		return &http.Client{Transport: rt,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	boom := errors.New("boom")
	answers := map[string]answerTransport{
		"error":                  {err: boom},
		"nil answer":             {},
		"nil body with a length": {resp: &http.Response{StatusCode: 201, ContentLength: 3, Header: http.Header{}}},
		"nil body":               {resp: &http.Response{StatusCode: 204, Header: http.Header{}}},
	}
	for _, status := range []int{200, 300, 301, 302, 303, 304, 307, 308} {
		for _, loc := range []string{"/x", "http://[::1", ""} {
			answers[fmt.Sprintf("%d to %q", status, loc)] = answerTransport{
				resp: &http.Response{StatusCode: status, Header: http.Header{"Location": {loc}}}, body: "moved"}
		}
	}
	for name, rt := range answers {
		for _, method := range []string{"POST", "GET", "HEAD", "patch"} {
			for _, target := range []string{"http://user:secret@up.example/v1/things?q=1", "http://up.example/v1"} {
				for _, body := range []bool{true, false} {
					for _, auth := range []string{"", "Bearer t"} {
						req := func() *http.Request {
							var b io.Reader
							if body {
								b = io.NopCloser(strings.NewReader("{}"))
							}
							r, _ := http.NewRequest(method, target, b)
							if auth != "" {
								r.Header.Set("Authorization", auth)
							}
							return r
						}
						var sent []string
						rt.auth = &sent
						want, wantErr := client(rt).Do(req())
						got, gotErr := roundTrip(rt, req())
						what := fmt.Sprintf("%s, %s %s (body %v, auth %q)", name, method, target, body, auth)
						if len(sent) == 2 && sent[0] != sent[1] {
							t.Errorf("%s: sent Authorization %q, the client %q", what, sent[1], sent[0])
						}
						if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
							t.Errorf("%s: error %v, the client's %v", what, gotErr, wantErr)
							continue
						}
						if wantErr != nil {
							if errors.Is(wantErr, boom) != errors.Is(gotErr, boom) {
								t.Errorf("%s: the transport's error is not within %v", what, gotErr)
							}
							continue
						}
						wb, _ := io.ReadAll(want.Body)
						gb, _ := io.ReadAll(got.Body)
						if got.StatusCode != want.StatusCode || string(gb) != string(wb) {
							t.Errorf("%s: %d %q, the client's %d %q", what, got.StatusCode, gb, want.StatusCode, wb)
						}
					}
				}
			}
		}
	}
}

// oneByteReader returns its text one byte a Read, to exercise every
// buffer boundary.
type oneByteReader struct{ s string }

func (r *oneByteReader) Read(b []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	if len(b) == 0 {
		return 0, nil
	}
	b[0], r.s = r.s[0], r.s[1:]
	return 1, nil
}

// TestAnAnswerIsReadIntoOneBufferAsReadAllWouldReadIt: readAtMost gives
// what io.ReadAll of an io.LimitReader gives, whatever length the answer
// declares (right, short, long, unknown), at and around the limit.
func TestAnAnswerIsReadIntoOneBufferAsReadAllWouldReadIt(t *testing.T) {
	const limit = 600
	for _, n := range []int{0, 1, 35, 511, 512, 513, 599, 600, 601, 2000} {
		text := strings.Repeat("x", n)
		for _, size := range []int64{int64(n), -1, 0, int64(n) / 2, int64(n) + 7, limit + 100} {
			for _, slow := range []bool{false, true} {
				mk := func() io.Reader {
					if slow {
						return &oneByteReader{text}
					}
					return strings.NewReader(text)
				}
				want, _ := io.ReadAll(io.LimitReader(mk(), limit))
				got, err := exchange.ReadAtMost(mk(), size, limit)
				if err != nil || string(got) != string(want) {
					t.Fatalf("%d bytes declared %d (one a read: %v): %d bytes (%v), ReadAll %d", n, size, slow, len(got), err, len(want))
				}
			}
		}
	}
}
