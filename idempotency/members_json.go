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

// RequestMembers returns the member digests of r's body under o: a JSON
// body (as ComputeFingerprint decides) member by member (JSONMembers),
// any other body as the one member "body". A multipart form is split by
// its caller (FormMembers). Call it on a request ComputeFingerprint
// accepted: it returns ErrBodyMalformed for a JSON body that does not
// decode.
func RequestMembers(r Request, o FingerprintOptions) (Members, error) {
	if isJSONBody(mediaType(r.ContentType), r.Body) {
		return JSONMembers(r.Body, o)
	}
	return BytesMembers(r.Body), nil
}

// MembersLike returns r's member digests split as stored was (the same
// kind and, for JSON, the same depth, whatever r's own bounds would
// pick), for Changed to compare. A body of another kind than stored's is
// split its own way (Changed then names the whole body).
func MembersLike(stored Members, r Request, o FingerprintOptions) (Members, error) {
	if stored.kind != membersJSON || !isJSONBody(mediaType(r.ContentType), r.Body) {
		return RequestMembers(r, o)
	}
	v, err := decodeMembers(r.Body, o)
	if err != nil {
		return Members{}, err
	}
	return membersAt(v, stored.depth)
}

// JSONMembers digests a JSON body member by member after o's exclusions
// (an excluded member is never a member) and null_equals_missing, values
// compared as the fingerprint compares them (numbers as decimals: 100 and
// 100.00 digest alike; key order does not matter). Each member is an RFC
// 6901 pointer: a scalar or an empty object or array above the depth the
// digests are taken at, or any value at that depth (its whole subtree).
// The depth is the deepest, up to MaxMemberDepth, at which the body has
// at most MaxMembers members.
func JSONMembers(body []byte, o FingerprintOptions) (Members, error) {
	v, err := decodeMembers(body, o)
	if err != nil {
		return Members{}, err
	}
	var leaves, nodes [MaxMemberDepth + 1]int
	countNodes(v, 0, &leaves, &nodes)
	depth, above := 0, 0
	for d := 0; d <= MaxMemberDepth; d++ {
		if above+nodes[d] > MaxMembers {
			break
		}
		depth = d
		above += leaves[d]
	}
	return membersAt(v, depth)
}

// decodeMembers decodes body and drops what the fingerprint drops.
func decodeMembers(body []byte, o FingerprintOptions) (any, error) {
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
	return prune(v, ptrs, 0, o.NullEqualsMissing), nil
}

// prune drops from v the values the pointers ptrs (at token depth) end
// at, and null object members when nulls is set, as the canonicaliser
// does: an excluded array element is removed and those after it move up.
func prune(v any, ptrs [][]string, depth int, nulls bool) any {
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
			t[k] = prune(c, child, depth+1, nulls)
		}
	case []any:
		kept := t[:0]
		for i, c := range t {
			drop, child := match(func(tok string) bool { j, ok := arrayIndex(tok); return ok && j == i })
			if !drop {
				kept = append(kept, prune(c, child, depth+1, nulls))
			}
		}
		return kept
	}
	return v
}

// countNodes counts, per depth up to MaxMemberDepth, the values
// (nodes) and those that are members at any deeper cut (leaves: scalars
// and empty containers).
func countNodes(v any, depth int, leaves, nodes *[MaxMemberDepth + 1]int) {
	nodes[depth]++
	children := containerChildren(v)
	if len(children) == 0 {
		leaves[depth]++
		return
	}
	if depth == MaxMemberDepth {
		return
	}
	for _, c := range children {
		countNodes(c, depth+1, leaves, nodes)
	}
}

// containerChildren returns a non-empty object's or array's values.
func containerChildren(v any) []any {
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

// membersAt digests v's members cut at depth.
func membersAt(v any, depth int) (Members, error) {
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
						if err := walk(c, ptr+"/"+escapeToken(key), k+1); err != nil {
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
		enc, err := appendMemberValue(nil, v)
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

// escapeToken writes an object member name as an RFC 6901 token.
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// appendMemberValue appends a canonical encoding of a decoded value:
// type-tagged, length-prefixed, object members sorted by name, numbers
// in the fingerprint's canonical decimal form.
func appendMemberValue(b []byte, v any) ([]byte, error) {
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
			if b, err = appendMemberValue(b, c); err != nil {
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
			if b, err = appendMemberValue(b, t[k]); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("idempotency: unexpected JSON value %T", v)
}
