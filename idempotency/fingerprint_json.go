package idempotency

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
)

// Limits on JSON numbers. apd represents 1e1000000000 cheaply, but a number
// that size is an attack, not an amount, and parsing a megabyte of digits
// costs quadratic time.
const (
	// maxNumberDigits caps the digits of a number's mantissa as written.
	maxNumberDigits = 1000
	// maxNumberExponent caps the magnitude of a non-zero number: the
	// exponent of its most significant digit, whatever the spelling.
	maxNumberExponent = 10000
)

// Type tags of the canonical JSON encoding. Each value starts with its tag,
// so values of different types never encode alike ("1" vs 1, "null" vs null).
const (
	tagNull   = 'n'
	tagFalse  = 'f'
	tagTrue   = 't'
	tagNumber = 'N'
	tagString = 'S'
	tagObject = 'O'
	tagArray  = 'A'
)

// jsonNode is one parsed JSON value.
type jsonNode struct {
	tag     byte
	text    string       // string value, or canonical number
	members []jsonMember // object members, sorted by name
	elems   []*jsonNode  // array elements
	dropped bool         // matched by an Exclude pointer
}

// jsonMember is one member of a JSON object.
type jsonMember struct {
	name string
	val  *jsonNode
}

// parseJSONBody parses a body that must hold exactly one JSON value.
func parseJSONBody(body []byte) (*jsonNode, error) {
	// encoding/json turns invalid UTF-8 into U+FFFD, which would make
	// different bodies equal. RFC 8259 requires UTF-8, so refuse it.
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrBodyMalformed)
	}
	// json.Valid is strict (no trailing data, nesting depth capped at
	// 10000) so that the token walk below sees only well-formed input and
	// its recursion is bounded.
	if !json.Valid(body) {
		var se *json.SyntaxError
		if err := json.Unmarshal(body, new(json.RawMessage)); errors.As(err, &se) {
			// Only the offset: the message may quote the body.
			return nil, fmt.Errorf("%w: syntax error at byte %d", ErrBodyMalformed, se.Offset)
		}
		return nil, ErrBodyMalformed
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	// UseNumber keeps the literal, so that numbers are compared as
	// decimals rather than as float64s that round 2^53+1 to 2^53.
	dec.UseNumber()
	return readJSONValue(dec)
}

// readJSONValue reads the next value from dec.
func readJSONValue(dec *json.Decoder) (*jsonNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, tokenError(dec)
	}
	switch t := tok.(type) {
	case nil:
		return &jsonNode{tag: tagNull}, nil
	case bool:
		if t {
			return &jsonNode{tag: tagTrue}, nil
		}
		return &jsonNode{tag: tagFalse}, nil
	case string:
		return &jsonNode{tag: tagString, text: t}, nil
	case json.Number:
		s, err := canonicalNumber(string(t))
		if err != nil {
			return nil, fmt.Errorf("%w: %w at byte %d", ErrBodyMalformed, err, dec.InputOffset()-int64(len(t)))
		}
		return &jsonNode{tag: tagNumber, text: s}, nil
	case json.Delim:
		if t == '[' {
			n := &jsonNode{tag: tagArray}
			for dec.More() {
				e, err := readJSONValue(dec)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, e)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, tokenError(dec)
			}
			return n, nil
		}
		return readJSONObject(dec)
	}
	return nil, tokenError(dec)
}

// tokenError reports a token the walk did not expect. json.Valid makes it
// unreachable; the error it wraps is dropped because it may quote the body.
func tokenError(dec *json.Decoder) error {
	return fmt.Errorf("%w: unexpected token at byte %d", ErrBodyMalformed, dec.InputOffset())
}

// readJSONObject reads the members of an object whose '{' has been read.
func readJSONObject(dec *json.Decoder) (*jsonNode, error) {
	start := dec.InputOffset() - 1
	n := &jsonNode{tag: tagObject}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, tokenError(dec)
		}
		name, _ := k.(string) // json.Valid has checked keys are strings
		v, err := readJSONValue(dec)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, jsonMember{name: name, val: v})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, tokenError(dec)
	}
	// Sorted by byte order, which for UTF-8 is code point order, so the
	// encoding does not depend on the order the client wrote.
	slices.SortFunc(n.members, func(a, b jsonMember) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(n.members); i++ {
		// Parsers disagree on which duplicate wins; the upstream may read
		// the other one than we would, so the intent is ambiguous.
		if n.members[i].name == n.members[i-1].name {
			return nil, fmt.Errorf("%w: duplicate key in object at byte %d", ErrBodyMalformed, start)
		}
	}
	return n, nil
}

// canonicalNumber returns the canonical text of a JSON number literal: the
// sign, the coefficient without trailing zeros, "e" and the exponent, so that
// 100, 100.00, 1e2 and 1.0E+2 all give "1e2". Every zero gives "0". The
// format is our own rather than apd's, so that an apd upgrade cannot change
// stored fingerprints.
func canonicalNumber(lit string) (string, error) {
	mant := lit
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant = lit[:i]
	}
	if d := len(mant) - strings.Count(mant, "-") - strings.Count(mant, "."); d > maxNumberDigits {
		return "", fmt.Errorf("number with %d digits, more than %d", d, maxNumberDigits)
	}
	var d apd.Decimal
	if _, _, err := d.SetString(lit); err != nil {
		// apd refuses exponents beyond its own ±100000.
		return "", errors.New("number out of range")
	}
	if d.IsZero() {
		// apd keeps the sign and exponent of a zero; -0, 0.0 and 0e5 are
		// one amount.
		return "0", nil
	}
	var r apd.Decimal
	r.Reduce(&d)
	if adj := int64(r.Exponent) + r.NumDigits() - 1; adj > maxNumberExponent || adj < -maxNumberExponent {
		return "", fmt.Errorf("number with exponent %d, beyond ±%d", adj, maxNumberExponent)
	}
	sign := ""
	if r.Negative {
		sign = "-"
	}
	return sign + r.Coeff.String() + "e" + strconv.Itoa(int(r.Exponent)), nil
}

// exclude marks the value that the pointer tokens toks refer to as dropped.
// Marking rather than removing makes the result independent of the order of
// the Exclude list, which matters when two pointers name elements of one
// array.
func (n *jsonNode) exclude(toks []string) {
	if len(toks) == 0 {
		return // the whole document; Validate refuses it
	}
	cur := n
	for _, t := range toks {
		switch cur.tag {
		case tagObject:
			i, ok := slices.BinarySearchFunc(cur.members, t, func(m jsonMember, t string) int { return strings.Compare(m.name, t) })
			if !ok {
				return
			}
			cur = cur.members[i].val
		case tagArray:
			i, ok := arrayIndex(t)
			if !ok || i >= len(cur.elems) {
				return
			}
			cur = cur.elems[i]
		default:
			return
		}
	}
	cur.dropped = true
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

// appendCanonical appends the canonical encoding of n to b. Strings and
// names are length-prefixed and containers carry their element count, so
// the encoding is unambiguous without any quoting or escaping.
func (n *jsonNode) appendCanonical(b []byte, nullIsMissing bool) []byte {
	b = append(b, n.tag)
	switch n.tag {
	case tagNumber, tagString:
		b = binary.AppendUvarint(b, uint64(len(n.text)))
		b = append(b, n.text...)
	case tagObject:
		keep := func(m jsonMember) bool {
			return !m.val.dropped && !(nullIsMissing && m.val.tag == tagNull)
		}
		count := 0
		for _, m := range n.members {
			if keep(m) {
				count++
			}
		}
		b = binary.AppendUvarint(b, uint64(count))
		for _, m := range n.members {
			if keep(m) {
				b = binary.AppendUvarint(b, uint64(len(m.name)))
				b = append(b, m.name...)
				b = m.val.appendCanonical(b, nullIsMissing)
			}
		}
	case tagArray:
		count := 0
		for _, e := range n.elems {
			if !e.dropped {
				count++
			}
		}
		b = binary.AppendUvarint(b, uint64(count))
		for _, e := range n.elems {
			if !e.dropped {
				b = e.appendCanonical(b, nullIsMissing)
			}
		}
	}
	return b
}
