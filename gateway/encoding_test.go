package gateway_test

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestACompressedBodyIsRefusedNamingItsEncoding: a JSON endpoint's body
// sent with Content-Encoding gzip is 415 whose detail names the encoding
// and says to send the body uncompressed, with Accept-Encoding: identity
// (RFC 7694), not a 400 "invalid UTF-8"; nothing runs, and the same body
// uncompressed under the same key runs.
func TestACompressedBodyIsRefusedNamingItsEncoding(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 4), "", countingHandler(&runs))
	alice := token(t, "alice")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"amount":1}`))
	zw.Close()
	req := post(t, srv.URL+"/v1/things", alice, "gz-1", gz.String())
	req.Header.Set("Content-Encoding", "gzip")
	st, hd, b := do(t, req)
	if st != http.StatusUnsupportedMediaType || !strings.Contains(b, `Content-Encoding \"gzip\" is not accepted`) ||
		hd.Get("Accept-Encoding") != "identity" {
		t.Fatalf("gzip body: %s; want 415 naming the encoding, with Accept-Encoding: identity", describe(st, hd, b))
	}
	req = post(t, srv.URL+"/v1/things", alice, "gz-1", `{"amount":1}`)
	req.Header.Set("Content-Encoding", "identity")
	if st, hd, b := do(t, req); st != http.StatusCreated {
		t.Errorf("the same body uncompressed: %s, want 201", describe(st, hd, b))
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("upstream ran %d times, want 1", n)
	}
}
