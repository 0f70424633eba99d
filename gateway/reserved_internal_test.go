package gateway

import (
	"strings"
	"testing"
)

// TestReservedHeadersAreFoundWithoutCopiesAsWithThem: the byte-by-byte
// check of a reserved X-Idempotency-* header name (no lowered copy per
// header and request) refuses and lets through exactly the names the
// lowered-copy check did, in every case, with '_' for '-', and with
// non-ASCII characters (İ and the Kelvin sign lower to ASCII letters).
func TestReservedHeadersAreFoundWithoutCopiesAsWithThem(t *testing.T) {
	copied := func(name string) bool {
		return len(name) >= len(reservedPrefix) &&
			strings.ReplaceAll(strings.ToLower(name[:len(reservedPrefix)]), "_", "-") == reservedPrefix
	}
	names := []string{"X-Idempotency-Actor", "x_idempotency_actor", "X_IDEMPOTENCY-", "X-Idempotency",
		"X-Idempotenc-Actor", "Idempotency-Key", "Accept-Encoding", "", "X-İdempotency-Actor", "X-Idempotenc\u212a-",
		"X-\u0130dempotency-Actor", "x-idempotency-\u00e9", "Y-Idempotency-Actor", "X--dempotency-Actor"}
	for _, base := range []string{"X-Idempotency-", "x_idempotency_"} {
		for i := range len(base) {
			for _, c := range []string{"_", "-", "A", "a", "\u0130", "\u212a", "\x00", "é"} {
				names = append(names, base[:i]+c+base[i+1:]+"Actor")
			}
		}
	}
	for _, name := range names {
		if got, want := reserved(name), copied(name); got != want {
			t.Errorf("reserved(%q) = %v, the lowered-copy check says %v", name, got, want)
		}
	}
}
