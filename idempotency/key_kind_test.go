package idempotency

import (
	"strings"
	"testing"
)

// TestAnInvalidKeyByteIsNamedByItsKind: a key refused for a byte it may
// not hold says which kind of byte (a space, with how to keep it; a tab; a
// control character; a non-ASCII byte) and where, never the byte itself.
func TestAnInvalidKeyByteIsNamedByItsKind(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"order 1", `a space at byte 5 (a bare key has none: send the key as an sf-string, "...", to keep it)`},
		{"a1, a2", "a space at byte 3"},
		{"a\tb", "a tab at byte 1"},
		{"ab\x7f", "a control character at byte 2"},
		{`"a` + "\x01" + `b"`, "a control character at byte 2"},
		{"clé-1", "a non-ASCII byte at byte 2"},
		{`"clé"`, "a non-ASCII byte at byte 3"},
	} {
		_, err := ParseKeyHeader(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseKeyHeader(%q) = %v, want it to say %q", tt.in, err, tt.want)
		}
	}
}
