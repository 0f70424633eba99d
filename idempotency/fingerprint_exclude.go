package idempotency

import (
	"slices"
	"strconv"
)

// The canonicaliser applies FingerprintOptions.Exclude while it writes:
// each value is given the pointers that lead through it ("act", indexes
// into canonicaliser.ptrs), and a child that a pointer ends at is walked
// (so that it is as valid as any other value) but not written.

// nameIs returns a pointer-token matcher for an object member name.
func nameIs(name []byte) func(string) bool {
	return func(tok string) bool { return tok == string(name) }
}

// pointersAt looks at the pointers act at token depth that match a child:
// drop reports whether one of them ends at the child, child lists those
// that lead further into it. child is nil (no allocation) when act is.
func (c *canonicaliser) pointersAt(act []int32, depth int, match func(string) bool) (drop bool, child []int32) {
	for _, i := range act {
		toks := c.ptrs[i]
		if !match(toks[depth]) {
			continue
		}
		if len(toks) == depth+1 {
			drop = true
		} else {
			child = append(child, i)
		}
	}
	return drop, child
}

// droppedElements returns how many distinct elements of an n-element array
// the pointers act end at.
func (c *canonicaliser) droppedElements(act []int32, depth, n int) int {
	var seen []int
	for _, i := range act {
		toks := c.ptrs[i]
		if len(toks) != depth+1 {
			continue
		}
		if j, ok := arrayIndex(toks[depth]); ok && j < n && !slices.Contains(seen, j) {
			seen = append(seen, j)
		}
	}
	return len(seen)
}

// arrayIndex parses an RFC 6901 array index: "0" or digits without a
// leading zero. "-" (past the end) and anything else match no element.
func arrayIndex(t string) (int, bool) {
	if t == "" || (t[0] == '0' && len(t) > 1) {
		return 0, false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.Atoi(t)
	return i, err == nil
}
