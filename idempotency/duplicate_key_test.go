package idempotency

import (
	"errors"
	"strings"
	"testing"
)

// TestDuplicateKeyIsReportedAtTheKey: a client told where its body is
// wrong is pointed at the repeated key itself (its second occurrence), not
// at the start of the object holding it.
func TestDuplicateKeyIsReportedAtTheKey(t *testing.T) {
	for _, tc := range []struct {
		body, want string
	}{
		{`{"a":1,"b":2,"a":3}`, "duplicate key at byte 13 (in the object at byte 0)"},
		{`{"x":{"k":1, "k":2}}`, "duplicate key at byte 13 (in the object at byte 5)"},
	} {
		_, err := ComputeFingerprint(Request{Method: "POST", Path: "/p", ContentType: "application/json", Body: []byte(tc.body)},
			FingerprintOptions{})
		if !errors.Is(err, ErrBodyMalformed) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("body %s: %v, want %q", tc.body, err, tc.want)
		}
	}
}
