package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAMissingKeySaysWhatToSend: a request without an Idempotency-Key on
// an endpoint that requires one is 400 missing-key whose detail says what
// to send (one key per intent, the same on every retry), and nothing runs.
func TestAMissingKeySaysWhatToSend(t *testing.T) {
	var runs atomic.Int64
	srv := serveWrapped(t, openStore(t, 4), "", countingHandler(&runs))
	st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "", `{"amount":1}`))
	if st != http.StatusBadRequest {
		t.Fatalf("%s, want 400", describe(st, hd, b))
	}
	var p struct{ Type, Detail string }
	if err := json.Unmarshal([]byte(b), &p); err != nil || !strings.HasSuffix(p.Type, "/missing-key") {
		t.Fatalf("body %s: want a missing-key problem (%v)", b, err)
	}
	for _, want := range []string{"Idempotency-Key", "every retry", "nothing was executed"} {
		if !strings.Contains(p.Detail, want) {
			t.Errorf("missing-key detail %q does not say %q", p.Detail, want)
		}
	}
	if n := runs.Load(); n != 0 {
		t.Errorf("upstream ran %d times, want 0", n)
	}
}
