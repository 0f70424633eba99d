package idempotency

import (
	"errors"
	"testing"
)

// TestLoneSurrogatesAreRefusedNotConflated checks that a string with a
// lone UTF-16 surrogate escape is refused (400 at the gateway) rather than
// read as U+FFFD, which made {"name":"\ud800"}, {"name":"\udbff"} and
// {"name":"\ufffd"} one request; valid pairs and U+FFFD itself still work.
func TestLoneSurrogatesAreRefusedNotConflated(t *testing.T) {
	refused := []struct{ name, body string }{
		{"high", `{"name":"\ud800"}`},
		{"high, last", `{"name":"\udbff"}`},
		{"low", `{"name":"\udc00"}`},
		{"high then a letter escape", `["\ud800\u0041"]`},
		{"high then high", `["\ud800\ud800"]`},
		{"low then high", `["\udfff\ud800"]`},
		{"in a name", `{"\ud800":1}`},
		{"in an excluded member", `{"a":1,"t":"x\uDBFFy"}`},
		{"in an excluded element", `[1,"\udc01"]`},
		{"after an escaped backslash", `["\\\ud800"]`},
	}
	opts := FingerprintOptions{Exclude: []string{"/t", "/1"}}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ComputeFingerprint(post(tt.body), opts); !errors.Is(err, ErrBodyMalformed) {
				t.Fatalf("ComputeFingerprint(%s) error = %v, want ErrBodyMalformed", tt.body, err)
			}
		})
	}

	accepted := []struct{ name, a, b string }{
		{"pair equals its UTF-8", `{"name":"\ud83d\ude00"}`, `{"name":"😀"}`},
		{"pair upper case", `{"name":"\uD83D\uDE00"}`, `{"name":"😀"}`},
		{"replacement char escaped", `{"name":"\ufffd"}`, `{"name":"�"}`},
		{"escaped backslash then u", `["\\ud800"]`, `["\\ud800"]`},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			fa, err := ComputeFingerprint(post(tt.a), opts)
			if err != nil {
				t.Fatalf("ComputeFingerprint(%s): %v", tt.a, err)
			}
			fb, err := ComputeFingerprint(post(tt.b), opts)
			if err != nil || !fa.Equal(fb) {
				t.Fatalf("%s and %s: equal %v, error %v; want equal", tt.a, tt.b, fa.Equal(fb), err)
			}
		})
	}
}
