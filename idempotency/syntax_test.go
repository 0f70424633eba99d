package idempotency

import (
	"errors"
	"strings"
	"testing"
)

// TestAMalformedBodySaysWhatIsWrongWithIt: a JSON body that is two values,
// or one cut short, is refused naming that (and where), not as a bare
// "syntax error"; no message quotes the body.
func TestAMalformedBodySaysWhatIsWrongWithIt(t *testing.T) {
	for _, tt := range []struct{ body, want string }{
		{`{} {}`, "more than one JSON value (the second starts at byte 3)"},
		{`{"a":1}{"b":2}`, "more than one JSON value (the second starts at byte 7)"},
		{`{"amount":`, "the JSON value is cut short (it ends at byte 10)"},
		{`{"amount":xyz}`, "syntax error at byte"},
	} {
		_, err := canonicalOf([]byte(tt.body), FingerprintOptions{})
		if !errors.Is(err, ErrBodyMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("body %q: %v, want it to say %q", tt.body, err, tt.want)
		}
		if strings.Contains(err.Error(), "xyz") || strings.Contains(err.Error(), "amount") {
			t.Errorf("body %q: error %q quotes the body", tt.body, err)
		}
	}
}
