package idempotency

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The reference member digests: the first implementation, which decodes
// the body into a tree (encoding/json into any) and digests its members
// from it. The canonical walk (members_canon.go) must give the same bytes,
// so that the digests records stored under it still compare
// (TestMemberDigestsMatchTheReference).

// refJSONMembers digests a JSON body member by member after o's exclusions
// (an excluded member is never a member) and null_equals_missing, values
// compared as the fingerprint compares them (numbers as decimals: 100 and
// 100.00 digest alike; key order does not matter). Each member is an RFC
// 6901 pointer: a scalar or an empty object or array above the depth the
// digests are taken at, or any value at that depth (its whole subtree).
// The depth is the deepest, up to MaxMemberDepth, at which the body has
// at most MaxMembers members.
func refJSONMembers(body []byte, o FingerprintOptions) (Members, error) {
	v, err := refDecodeMembers(body, o)
	if err != nil {
		return Members{}, err
	}
	var leaves, nodes [MaxMemberDepth + 1]int
	refCountNodes(v, 0, &leaves, &nodes)
	depth, above := 0, 0
	for d := 0; d <= MaxMemberDepth; d++ {
		if above+nodes[d] > MaxMembers {
			break
		}
		depth = d
		above += leaves[d]
	}
	return refMembersAt(v, depth)
}

// refDecodeMembers decodes body and drops what the fingerprint drops.
func refDecodeMembers(body []byte, o FingerprintOptions) (any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBodyMalformed, err)
	}
	ptrs := make([][]string, 0, len(o.Exclude))
	for _, p := range o.Exclude {
		toks, err := ParsePointer(p)
		if err != nil {
			return nil, fmt.Errorf("idempotency: fingerprint options: %w", err)
		}
		ptrs = append(ptrs, toks)
	}
	return refPrune(v, ptrs, 0, o.NullEqualsMissing), nil
}

// refPrune drops from v the values the pointers ptrs (at token depth) end
// at, and null object members when nulls is set, as the canonicaliser
// does: an excluded array element is removed and those after it move up.
func refPrune(v any, ptrs [][]string, depth int, nulls bool) any {
	match := func(ok func(string) bool) (drop bool, child [][]string) {
		for _, p := range ptrs {
			if !ok(p[depth]) {
				continue
			}
			if len(p) == depth+1 {
				drop = true
			} else {
				child = append(child, p)
			}
		}
		return drop, child
	}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			drop, child := match(func(tok string) bool { return tok == k })
			if drop || (nulls && c == nil) {
				delete(t, k)
				continue
			}
			t[k] = refPrune(c, child, depth+1, nulls)
		}
	case []any:
		kept := t[:0]
		for i, c := range t {
			drop, child := match(func(tok string) bool { j, ok := arrayIndex(tok); return ok && j == i })
			if !drop {
				kept = append(kept, refPrune(c, child, depth+1, nulls))
			}
		}
		return kept
	}
	return v
}

// refCountNodes counts, per depth up to MaxMemberDepth, the values
// (nodes) and those that are members at any deeper cut (leaves: scalars
// and empty containers).
func refCountNodes(v any, depth int, leaves, nodes *[MaxMemberDepth + 1]int) {
	nodes[depth]++
	children := refContainerChildren(v)
	if len(children) == 0 {
		leaves[depth]++
		return
	}
	if depth == MaxMemberDepth {
		return
	}
	for _, c := range children {
		refCountNodes(c, depth+1, leaves, nodes)
	}
}

// refContainerChildren returns a non-empty object's or array's values.
func refContainerChildren(v any) []any {
	switch t := v.(type) {
	case map[string]any:
		out := make([]any, 0, len(t))
		for _, c := range t {
			out = append(out, c)
		}
		return out
	case []any:
		return t
	}
	return nil
}

// refMembersAt digests v's members cut at depth.
func refMembersAt(v any, depth int) (Members, error) {
	type entry struct {
		name string
		sum  memberSum
	}
	var entries []entry
	var walk func(v any, ptr string, k int) error
	walk = func(v any, ptr string, k int) error {
		if k < depth {
			switch t := v.(type) {
			case map[string]any:
				if len(t) > 0 {
					for key, c := range t {
						if err := walk(c, ptr+"/"+refEscapeToken(key), k+1); err != nil {
							return err
						}
					}
					return nil
				}
			case []any:
				if len(t) > 0 {
					for i, c := range t {
						if err := walk(c, ptr+"/"+strconv.Itoa(i), k+1); err != nil {
							return err
						}
					}
					return nil
				}
			}
		}
		enc, err := refAppendMemberValue(nil, v)
		if err != nil {
			return err
		}
		h := newMemberHash(ptr)
		h.write(enc)
		entries = append(entries, entry{ptr, h.sum()})
		return nil
	}
	if err := walk(v, "", 0); err != nil {
		return Members{}, err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	m := Members{kind: membersJSON, depth: depth}
	for _, e := range entries {
		m.names, m.sums = append(m.names, e.name), append(m.sums, e.sum)
	}
	return m, nil
}

// refEscapeToken writes an object member name as an RFC 6901 token.
func refEscapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// refAppendMemberValue appends a canonical encoding of a decoded value:
// type-tagged, length-prefixed, object members sorted by name, numbers
// in the fingerprint's canonical decimal form.
func refAppendMemberValue(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, 'n'), nil
	case bool:
		if t {
			return append(b, 't'), nil
		}
		return append(b, 'f'), nil
	case json.Number:
		n, err := canonicalNumber(string(t))
		if err != nil {
			return nil, err
		}
		b = append(b, 'N')
		b = binary.AppendUvarint(b, uint64(len(n)))
		return append(b, n...), nil
	case string:
		b = append(b, 'S')
		b = binary.AppendUvarint(b, uint64(len(t)))
		return append(b, t...), nil
	case []any:
		b = append(b, 'A')
		b = binary.AppendUvarint(b, uint64(len(t)))
		var err error
		for _, c := range t {
			if b, err = refAppendMemberValue(b, c); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, 'O')
		b = binary.AppendUvarint(b, uint64(len(keys)))
		var err error
		for _, k := range keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
			if b, err = refAppendMemberValue(b, t[k]); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("idempotency: unexpected JSON value %T", v)
}
