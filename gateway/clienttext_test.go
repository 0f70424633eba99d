package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// problemDetail decodes the detail of a problem+json body.
func problemDetail(t testing.TB, body string) string {
	t.Helper()
	var p struct {
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("not a problem document: %v: %s", err, body)
	}
	return p.Detail
}

// TestTooLargeBodyProblemStatesTheCap checks that a 413 tells the client
// the cap it went over, in the endpoint's own unit and in bytes, and the
// setting's name, so that the client can split the request and the
// operator can find what to raise.
func TestTooLargeBodyProblemStatesTheCap(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 8), "    max_request_bytes: 1KiB\n", countingHandler(&runs))
	body := `{"pad":"` + strings.Repeat("x", 2000) + `"}`
	status, _, got := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "too-big", body))
	if status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status = %d, want 413: %s", status, got)
	}
	detail := problemDetail(t, got)
	for _, want := range []string{"max_request_bytes", "1KiB", "1024 bytes"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail %q does not state %q", detail, want)
		}
	}
	if runs.Load() != 0 {
		t.Errorf("upstream ran %d times for a refused body", runs.Load())
	}
}

// TestProblemDetailsCarryNoPackagePrefix checks that the errors the
// gateway turns into problem details (a bad key, a malformed JSON or
// multipart body) reach the client without the Go package prefix
// ("idempotency: ", "gateway: ") that names a part of the server, while
// keeping what the error says.
func TestProblemDetailsCarryNoPackagePrefix(t *testing.T) {
	var runs atomic.Int64
	s := openStore(t, 8)
	jsonSrv := serveWrapped(t, s, "", countingHandler(&runs))
	formSrv := serveWrapped(t, s, "    body: multipart\n", countingHandler(&runs))
	auth := token(t, "alice")
	tests := []struct {
		name string
		req  func() *http.Request
		want string // what the detail must still say
	}{
		{"key with a character outside ASCII", func() *http.Request {
			return post(t, jsonSrv.URL+"/v1/things", auth, "ab\u00e9cd", `{}`)
		}, "key contains a character outside visible ASCII"},
		{"malformed structured-field key", func() *http.Request {
			return post(t, jsonSrv.URL+"/v1/things", auth, `"ab`, `{}`)
		}, "malformed structured-field string"},
		{"body that is not JSON", func() *http.Request {
			return post(t, jsonSrv.URL+"/v1/things", auth, "not-json", `{"a":`)
		}, "request body is not valid JSON"},
		{"multipart part without a field name", func() *http.Request {
			r := post(t, formSrv.URL+"/v1/things", auth, "no-field-name",
				"--x\r\nContent-Disposition: form-data\r\n\r\nv\r\n--x--\r\n")
			r.Header.Set("Content-Type", "multipart/form-data; boundary=x")
			return r
		}, "malformed multipart/form-data body: a part has no form-data field name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, body := do(t, tt.req())
			if status != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400: %s", status, body)
			}
			detail := problemDetail(t, body)
			if !strings.Contains(detail, tt.want) {
				t.Errorf("detail %q lost %q", detail, tt.want)
			}
			for _, pkg := range []string{"idempotency: ", "gateway: ", "sqlstore: ", "config: "} {
				if strings.Contains(detail, pkg) {
					t.Errorf("detail %q leaks the package prefix %q", detail, pkg)
				}
			}
		})
	}
	if runs.Load() != 0 {
		t.Errorf("upstream ran %d times for refused requests", runs.Load())
	}
}
