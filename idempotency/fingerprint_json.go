package idempotency

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Type tags of the canonical JSON encoding. Each value starts with its tag,
// so values of different types never encode alike ("1" vs 1, "null" vs null).
//
// The encoding (fingerprint v1) is: a number or string is its tag, the
// uvarint length of its text and the text (the canonical number, or the
// unescaped string); an object is 'O', the uvarint count of its kept members
// and, sorted by name, each member's uvarint name length, name and value; an
// array is 'A', the uvarint count of its kept elements and the elements.
// Lengths and counts make it unambiguous without quoting or escaping.
const (
	tagNull   = 'n'
	tagFalse  = 'f'
	tagTrue   = 't'
	tagNumber = 'N'
	tagString = 'S'
	tagObject = 'O'
	tagArray  = 'A'
)

// maxPooledBytes caps the buffers a canonicaliser keeps for reuse: bodies
// up to the default 1 MiB cap reuse theirs, a rare larger one is given back
// to the garbage collector instead of pinning its memory in the pool.
const maxPooledBytes = 4 << 20

// canonicaliser writes the canonical encoding of one JSON body into out,
// in two passes over the body and without building a tree: scanContainers
// records where each container ends and how many elements it has (the
// encoding puts the count first), then the writer walks the body once more,
// writing scalars as it meets them and buffering only the member list of
// the objects it is inside (to sort them). Its buffers are reused through
// canonicaliserPool.
type canonicaliser struct {
	body    []byte
	tab     []container // containers in the order their brackets open
	stack   []int32     // scanContainers: the open containers
	out     []byte      // tagJSON and the canonical encoding
	members []member    // a stack: the members of every object being written
	arena   []byte      // unescaped member names that had escapes
	str     []byte      // one unescaped string value
	num     []byte      // one canonical number
	ptrs    [][]string  // Exclude pointers as reference tokens
	nulls   bool        // FingerprintOptions.NullEqualsMissing

	// Member digests (members_canon.go).
	mptr   []byte        // the pointer of the member being walked
	mnames []byte        // the pointers of the members found
	ments  []memberEntry // the members found
	mbuf   []byte        // one member's framing, then its SHA-256
	mh     hash.Hash     // reused SHA-256
}

// container is what scanContainers learns of one object or array.
type container struct {
	end   int32 // offset just past the closing bracket
	count int32 // elements or members
	next  int32 // index of the first container after this one's subtree
}

// member is one object member whose value is still to be written.
type member struct {
	name []byte // unescaped: a slice of the body or of the arena
	key  int32  // offset of the key (its opening quote)
	pos  int32  // offset of the value
	ci   int32  // container index of the value, if it is one
	null bool   // the value is null
	drop bool   // matched by an Exclude pointer, or a null dropped
}

var canonicaliserPool = sync.Pool{New: func() any { return new(canonicaliser) }}

// canonicalJSON returns a canonicaliser whose out holds the canonical
// encoding of body, which must hold exactly one JSON value. The caller
// gives it back with release once out has been used.
func canonicalJSON(body []byte, o FingerprintOptions) (*canonicaliser, error) {
	// encoding/json turns invalid UTF-8 into U+FFFD, which would make
	// different bodies equal. RFC 8259 requires UTF-8, so refuse it.
	if !utf8.Valid(body) {
		return nil, ErrBodyMalformed.refine("invalid UTF-8")
	}
	// json.Valid is strict (no trailing data, nesting depth capped at
	// 10000) so that the passes below see only well-formed input and the
	// writer's recursion is bounded.
	if !json.Valid(body) {
		var se *json.SyntaxError
		if err := json.Unmarshal(body, new(json.RawMessage)); errors.As(err, &se) {
			// Only the offset and a fixed phrase: the message may quote the body.
			return nil, syntaxError(se)
		}
		return nil, ErrBodyMalformed
	}
	if len(body) > math.MaxInt32 {
		return nil, ErrBodyTooLarge.refine("%d bytes, more than a JSON body can be", len(body))
	}
	c := canonicaliserPool.Get().(*canonicaliser)
	c.body, c.nulls = body, o.NullEqualsMissing
	c.ptrs = c.ptrs[:0]
	for _, p := range o.Exclude {
		toks, _ := ParsePointer(p) // checked by Validate
		c.ptrs = append(c.ptrs, toks)
	}
	var act []int32
	for i := range c.ptrs {
		act = append(act, int32(i))
	}
	c.scanContainers()
	// The canonical form of typical bodies is up to about 1.5 times
	// their length (numbers grow by their tag, length and exponent):
	// sized once, so that appending never copies it.
	if want := len(body) + len(body)/2 + 16; cap(c.out) < want {
		c.out = make([]byte, 0, want)
	}
	c.out = append(c.out[:0], tagJSON)
	if _, _, err := c.value(skipWS(body, 0), 0, act, 0); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// syntaxError says what is wrong with a body json.Valid refused, in fixed
// words and a byte offset (never the body): two values where one is
// wanted, a value cut short, or a syntax error where it was found.
func syntaxError(se *json.SyntaxError) error {
	switch {
	case strings.HasSuffix(se.Error(), "after top-level value"):
		// se.Offset is just past the first byte of the second value.
		return ErrBodyMalformed.refine("more than one JSON value (the second starts at byte %d)", se.Offset-1)
	case se.Error() == "unexpected end of JSON input":
		return ErrBodyMalformed.refine("the JSON value is cut short (it ends at byte %d)", se.Offset)
	}
	return ErrBodyMalformed.refine("syntax error at byte %d", se.Offset)
}

// release gives c back to the pool, dropping buffers too large to keep.
func (c *canonicaliser) release() {
	c.body = nil
	if cap(c.out) > maxPooledBytes {
		c.out = nil
	}
	if cap(c.tab)*12 > maxPooledBytes {
		c.tab = nil
	}
	if cap(c.arena) > maxPooledBytes {
		c.arena = nil
	}
	if cap(c.str) > maxPooledBytes {
		c.str = nil
	}
	if cap(c.members)*40 > maxPooledBytes {
		c.members = nil
	}
	if cap(c.mnames) > maxPooledBytes || cap(c.mptr) > maxPooledBytes || cap(c.mbuf) > maxPooledBytes {
		c.mnames, c.mptr, c.mbuf = nil, nil, nil
	}
	if cap(c.ments)*16 > maxPooledBytes {
		c.ments = nil
	}
	c.members = c.members[:0]
	c.arena = c.arena[:0]
	canonicaliserPool.Put(c)
}

// value writes the value at pos, whose container index (if it is one) is
// ci. act are the Exclude pointers that lead through it, of which token
// depth names one of its children. It returns the offset after the value
// and the index of the next container.
func (c *canonicaliser) value(pos int, ci int32, act []int32, depth int) (int, int32, error) {
	switch c.body[pos] {
	case '{':
		return c.object(pos, ci, act, depth)
	case '[':
		return c.array(pos, ci, act, depth)
	case '"':
		end, err := c.appendString(pos)
		return end, ci, err
	case 'n':
		c.out = append(c.out, tagNull)
		return pos + 4, ci, nil
	case 't':
		c.out = append(c.out, tagTrue)
		return pos + 4, ci, nil
	case 'f':
		c.out = append(c.out, tagFalse)
		return pos + 5, ci, nil
	}
	end, err := c.appendNumber(pos)
	return end, ci, err
}

// array writes the array that starts at pos and is container ci.
func (c *canonicaliser) array(pos int, ci int32, act []int32, depth int) (int, int32, error) {
	t := c.tab[ci]
	n := int(t.count)
	c.out = append(c.out, tagArray)
	c.out = binary.AppendUvarint(c.out, uint64(n-c.droppedElements(act, depth, n)))
	p := skipWS(c.body, pos+1)
	next := ci + 1
	for i := 0; i < n; i++ {
		var drop bool
		var child []int32
		if len(act) > 0 {
			drop, child = c.pointersAt(act, depth, func(tok string) bool {
				j, ok := arrayIndex(tok)
				return ok && j == i
			})
		}
		mark := len(c.out)
		end, nx, err := c.value(p, next, child, depth+1)
		if err != nil {
			return 0, 0, err
		}
		if drop {
			// Still walked, so that an excluded value is as valid as
			// any other, but not written.
			c.out = c.out[:mark]
		}
		p = skipWS(c.body, skipWS(c.body, end)+1) // past the ',' or ']'
		next = nx
	}
	return int(t.end), t.next, nil
}

// object writes the object that starts at pos and is container ci.
func (c *canonicaliser) object(pos int, ci int32, act []int32, depth int) (int, int32, error) {
	t := c.tab[ci]
	base, arenaBase := len(c.members), len(c.arena)
	defer func() { c.members, c.arena = c.members[:base], c.arena[:arenaBase] }()
	p := skipWS(c.body, pos+1)
	next := ci + 1
	for c.body[p] != '}' {
		keyAt := p
		name, end, err := c.name(p)
		if err != nil {
			return 0, 0, err
		}
		p = skipWS(c.body, skipWS(c.body, end)+1) // past the ':'
		m := member{name: name, key: int32(keyAt), pos: int32(p), ci: next}
		switch c.body[p] {
		case '{', '[':
			end, next = int(c.tab[next].end), c.tab[next].next
		case '"':
			end, _ = skipString(c.body, p)
		case 'n':
			m.null, end = true, p+4
		case 't':
			end = p + 4
		case 'f':
			end = p + 5
		default:
			end = skipNumber(c.body, p)
		}
		c.members = append(c.members, m)
		if p = skipWS(c.body, end); c.body[p] == ',' {
			p = skipWS(c.body, p+1)
		}
	}
	ms := c.members[base:]
	// Sorted by byte order, which for UTF-8 is code point order, so the
	// encoding does not depend on the order the client wrote.
	slices.SortFunc(ms, func(a, b member) int { return bytes.Compare(a.name, b.name) })
	kept := 0
	for i := range ms {
		// Parsers disagree on which duplicate wins; the upstream may read
		// the other one than we would, so the intent is ambiguous.
		if i > 0 && bytes.Equal(ms[i].name, ms[i-1].name) {
			// The second occurrence in the body is the one to point at.
			return 0, 0, ErrBodyMalformed.refine("duplicate key at byte %d (in the object at byte %d)",
				max(ms[i].key, ms[i-1].key), pos)
		}
		if c.nulls && ms[i].null {
			ms[i].drop = true
		} else if len(act) > 0 {
			ms[i].drop, _ = c.pointersAt(act, depth, nameIs(ms[i].name))
		}
		if !ms[i].drop {
			kept++
		}
	}
	c.out = append(c.out, tagObject)
	c.out = binary.AppendUvarint(c.out, uint64(kept))
	for _, m := range ms {
		if m.drop && m.null {
			continue // nothing to check in a null
		}
		var child []int32
		if len(act) > 0 {
			_, child = c.pointersAt(act, depth, nameIs(m.name))
		}
		mark := len(c.out)
		c.out = binary.AppendUvarint(c.out, uint64(len(m.name)))
		c.out = append(c.out, m.name...)
		if _, _, err := c.value(int(m.pos), m.ci, child, depth+1); err != nil {
			return 0, 0, err
		}
		if m.drop {
			// Walked for validity like an excluded array element.
			c.out = c.out[:mark]
		}
	}
	return int(t.end), t.next, nil
}
