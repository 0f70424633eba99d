package idempotency

// This file keeps the fingerprint v1 canonicaliser as it was before the
// streaming one replaced it: a tree built from encoding/json's Decoder.Token.
// It is the reference the streaming canonicaliser is tested against
// (fingerprint_diff_test.go): every body the reference accepts must give
// byte-identical canonical bytes, or stored v1 records stop matching their
// retries. Do not "fix" it; it is frozen on purpose.

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
)

// refComputeFingerprint is ComputeFingerprint as it was, over the reference
// canonicaliser.
func refComputeFingerprint(r Request, o FingerprintOptions) (Fingerprint, error) {
	if err := o.Validate(); err != nil {
		return Fingerprint{}, fmt.Errorf("idempotency: fingerprint options: %w", err)
	}
	limit := o.MaxBytes
	if limit == 0 {
		limit = DefaultMaxFingerprintBytes
	}
	if int64(len(r.Body)) > limit {
		return Fingerprint{}, fmt.Errorf("%w: %d bytes, cap %d", ErrBodyTooLarge, len(r.Body), limit)
	}
	mt := mediaType(r.ContentType)
	body, err := refCanonicalBody(mt, r.Body, o)
	if err != nil {
		return Fingerprint{}, err
	}
	h := sha256.New()
	var v [4]byte
	binary.BigEndian.PutUint32(v[:], FingerprintV1)
	writeFramed(h, []byte("idemcoord fingerprint"))
	writeFramed(h, v[:])
	writeFramed(h, []byte(strings.ToUpper(r.Method)))
	writeFramed(h, []byte(r.Path))
	writeFramed(h, canonicalQuery(r.Query))
	writeFramed(h, []byte(mt))
	writeFramed(h, body)
	f := Fingerprint{Version: FingerprintV1}
	h.Sum(f.Sum[:0])
	return f, nil
}

// writeFramed is the reference's framing: it writes the concatenation of
// parts to h preceded by its length as 8 big-endian bytes.
func writeFramed(h hash.Hash, parts ...[]byte) {
	var n [8]byte
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	binary.BigEndian.PutUint64(n[:], uint64(total))
	h.Write(n[:]) // a hash.Hash never returns a write error
	for _, p := range parts {
		h.Write(p)
	}
}

// refCanonicalBody is the old canonicalBody.
func refCanonicalBody(mt string, body []byte, o FingerprintOptions) ([]byte, error) {
	if !isJSONBody(mt, body) {
		return append([]byte{tagVerbatim}, body...), nil
	}
	root, err := refParseJSONBody(body)
	if err != nil {
		return nil, err
	}
	for _, p := range o.Exclude {
		toks, _ := ParsePointer(p) // checked by Validate
		root.exclude(toks)
	}
	out := make([]byte, 0, len(body)+1)
	out = append(out, tagJSON)
	return root.appendCanonical(out, o.NullEqualsMissing), nil
}

// refNode is one parsed JSON value.
type refNode struct {
	tag     byte
	text    string      // string value, or canonical number
	members []refMember // object members, sorted by name
	elems   []*refNode  // array elements
	dropped bool        // matched by an Exclude pointer
}

// refMember is one member of a JSON object.
type refMember struct {
	name string
	val  *refNode
}

// refParseJSONBody parses a body that must hold exactly one JSON value.
func refParseJSONBody(body []byte) (*refNode, error) {
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
	return refReadValue(dec)
}

// refReadValue reads the next value from dec.
func refReadValue(dec *json.Decoder) (*refNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, refTokenError(dec)
	}
	switch t := tok.(type) {
	case nil:
		return &refNode{tag: tagNull}, nil
	case bool:
		if t {
			return &refNode{tag: tagTrue}, nil
		}
		return &refNode{tag: tagFalse}, nil
	case string:
		return &refNode{tag: tagString, text: t}, nil
	case json.Number:
		s, err := refCanonicalNumber(string(t))
		if err != nil {
			return nil, fmt.Errorf("%w: %w at byte %d", ErrBodyMalformed, err, dec.InputOffset()-int64(len(t)))
		}
		return &refNode{tag: tagNumber, text: s}, nil
	case json.Delim:
		if t == '[' {
			n := &refNode{tag: tagArray}
			for dec.More() {
				e, err := refReadValue(dec)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, e)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, refTokenError(dec)
			}
			return n, nil
		}
		return refReadObject(dec)
	}
	return nil, refTokenError(dec)
}

// refTokenError reports a token the walk did not expect. json.Valid makes it
// unreachable; the error it wraps is dropped because it may quote the body.
func refTokenError(dec *json.Decoder) error {
	return fmt.Errorf("%w: unexpected token at byte %d", ErrBodyMalformed, dec.InputOffset())
}

// refReadObject reads the members of an object whose '{' has been read.
func refReadObject(dec *json.Decoder) (*refNode, error) {
	start := dec.InputOffset() - 1
	n := &refNode{tag: tagObject}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, refTokenError(dec)
		}
		name, _ := k.(string) // json.Valid has checked keys are strings
		v, err := refReadValue(dec)
		if err != nil {
			return nil, err
		}
		n.members = append(n.members, refMember{name: name, val: v})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return nil, refTokenError(dec)
	}
	// Sorted by byte order, which for UTF-8 is code point order, so the
	// encoding does not depend on the order the client wrote.
	slices.SortFunc(n.members, func(a, b refMember) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(n.members); i++ {
		// Parsers disagree on which duplicate wins; the upstream may read
		// the other one than we would, so the intent is ambiguous.
		if n.members[i].name == n.members[i-1].name {
			return nil, fmt.Errorf("%w: duplicate key in object at byte %d", ErrBodyMalformed, start)
		}
	}
	return n, nil
}

// refCanonicalNumber returns the canonical text of a JSON number literal: the
// sign, the coefficient without trailing zeros, "e" and the exponent, so that
// 100, 100.00, 1e2 and 1.0E+2 all give "1e2". Every zero gives "0". The
// format is our own rather than apd's, so that an apd upgrade cannot change
// stored fingerprints.
func refCanonicalNumber(lit string) (string, error) {
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
func (n *refNode) exclude(toks []string) {
	if len(toks) == 0 {
		return // the whole document; Validate refuses it
	}
	cur := n
	for _, t := range toks {
		switch cur.tag {
		case tagObject:
			i, ok := slices.BinarySearchFunc(cur.members, t, func(m refMember, t string) int { return strings.Compare(m.name, t) })
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

// appendCanonical appends the canonical encoding of n to b. Strings and
// names are length-prefixed and containers carry their element count, so
// the encoding is unambiguous without any quoting or escaping.
func (n *refNode) appendCanonical(b []byte, nullIsMissing bool) []byte {
	b = append(b, n.tag)
	switch n.tag {
	case tagNumber, tagString:
		b = binary.AppendUvarint(b, uint64(len(n.text)))
		b = append(b, n.text...)
	case tagObject:
		keep := func(m refMember) bool {
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
