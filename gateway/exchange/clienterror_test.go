package exchange_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
)

// TestAClientIsToldAnErrorsReasonAndNeverItsText checks the one way a lower
// layer's error reaches a client: the detail written is the ClientReason
// of the ClientError in the error's chain (however it was wrapped), an
// error that is no ClientError gives the fallback and none of its text,
// and a detail the gateway wrote itself is passed on as it is. These are
// the cases of the package-prefix rewriting this mapping replaced.
func TestAClientIsToldAnErrorsReasonAndNeverItsText(t *testing.T) {
	const fallback = "the request cannot be read"
	_, keyErr := idempotency.ParseKeyHeader("abcd\u00e9")
	multipart := exchange.NewInvalid("malformed multipart/form-data body")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a missing key", idempotency.ErrKeyMissing, "key missing"},
		{"a key with a byte outside ASCII", keyErr,
			"key contains a character outside visible ASCII: a non-ASCII byte at byte 4"},
		{"a refinement, wrapped again", fmt.Errorf("gateway: fingerprint: %w", multipart.Refine("NextPart: EOF", io.EOF)),
			"malformed multipart/form-data body: NextPart: EOF"},
		{"a store's error", errors.New("sqlstore: config: store down"), fallback},
		{"the client's own word before a colon", exchange.NewInvalid("wait: must not be negative, got -1s"),
			"wait: must not be negative, got -1s"},
		{"a body that is not JSON", fmt.Errorf("fingerprint: %w", idempotency.ErrBodyMalformed), "request body is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := detail(t, exchange.Reason(tt.err, fallback)); got != tt.want {
				t.Errorf("detail for %q = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
	// Details the gateway writes itself reach the client unchanged.
	for _, d := range []string{
		"shard 3: owner \"eu\" is failed; nothing was executed",
		"nothing was executed; retry with the same key",
		"idempotency:no space stays",
		"",
	} {
		if got := detail(t, d); got != d {
			t.Errorf("detail %q written as %q", d, got)
		}
	}
}

// detail writes a problem with detail d and returns the detail the client reads.
func detail(t *testing.T, d string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	exchange.WriteProblem(rec, exchange.Problem{Type: "invalid-key", Title: "t", Status: http.StatusBadRequest, Detail: d}, 0)
	var p exchange.Problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	return p.Detail
}
