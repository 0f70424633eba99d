package idempotency

import (
	"bytes"
	"encoding/binary"
	"unicode/utf16"
	"unicode/utf8"
)

// The functions in this file read a body that json.Valid and utf8.Valid
// have accepted: they never see a syntax error, so they only find where
// things end.

// scanContainers fills c.tab with one entry per object and array of
// c.body, in the order their brackets open.
func (c *canonicaliser) scanContainers() {
	b := c.body
	c.tab, c.stack = c.tab[:0], c.stack[:0]
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i, _ = skipString(b, i)
			i-- // the loop steps past the closing quote
		case '[', '{':
			var n int32 = 1
			if j := skipWS(b, i+1); b[j] == ']' || b[j] == '}' {
				n = 0
			}
			c.stack = append(c.stack, int32(len(c.tab)))
			c.tab = append(c.tab, container{count: n})
		case ',':
			c.tab[c.stack[len(c.stack)-1]].count++
		case ']', '}':
			top := c.stack[len(c.stack)-1]
			c.stack = c.stack[:len(c.stack)-1]
			c.tab[top].end = int32(i + 1)
			c.tab[top].next = int32(len(c.tab))
		}
	}
}

// skipWS returns the offset of the first non-space byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
			continue
		}
		break
	}
	return i
}

// skipString returns the offset after the string that starts at i, and
// whether it contains a backslash escape.
func skipString(b []byte, i int) (end int, escaped bool) {
	start := i + 1
	for j := start; ; {
		q := j + bytes.IndexByte(b[j:], '"')
		k := q
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 { // not itself escaped
			return q + 1, escaped || bytes.IndexByte(b[start:q], '\\') >= 0
		}
		escaped = true
		j = q + 1
	}
}

// skipNumber returns the offset after the number that starts at i.
func skipNumber(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case '-', '+', '.', 'e', 'E', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			i++
			continue
		}
		break
	}
	return i
}

// name returns the unescaped member name that starts at i and the offset
// after it. A name without escapes is a slice of the body; one with escapes
// is unescaped into the arena.
func (c *canonicaliser) name(i int) ([]byte, int, error) {
	end, escaped := skipString(c.body, i)
	raw := c.body[i+1 : end-1]
	if !escaped {
		return raw, end, nil
	}
	start := len(c.arena)
	var err error
	if c.arena, err = unescape(c.arena, raw, i+1); err != nil {
		return nil, 0, err
	}
	return c.arena[start:], end, nil
}

// appendString writes the string value that starts at i and returns the
// offset after it.
func (c *canonicaliser) appendString(i int) (int, error) {
	end, escaped := skipString(c.body, i)
	s := c.body[i+1 : end-1]
	if escaped {
		var err error
		if c.str, err = unescape(c.str[:0], s, i+1); err != nil {
			return 0, err
		}
		s = c.str
	}
	c.out = append(c.out, tagString)
	c.out = binary.AppendUvarint(c.out, uint64(len(s)))
	c.out = append(c.out, s...)
	return end, nil
}

// unescape appends the string content s (between the quotes, at offset
// off of the body) to dst with its escapes decoded as encoding/json
// decodes them, except that it refuses a lone UTF-16 surrogate: encoding/json
// reads \ud800 as U+FFFD, which would make {"a":"\ud800"}, {"a":"\udbff"}
// and {"a":"\ufffd"} one request, while parsers that keep the surrogate
// (JavaScript, Python, Java) hand the upstream three different strings.
func unescape(dst, s []byte, off int) ([]byte, error) {
	for i := 0; i < len(s); {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			return append(dst, s[i:]...), nil
		}
		dst = append(dst, s[i:i+j]...)
		i += j
		switch e := s[i+1]; e {
		case 'u':
			r := hex4(s[i+2 : i+6])
			if !utf16.IsSurrogate(r) {
				dst = utf8.AppendRune(dst, r)
				i += 6
				break
			}
			if i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if d := utf16.DecodeRune(r, hex4(s[i+8:i+12])); d != utf8.RuneError {
					dst = utf8.AppendRune(dst, d)
					i += 12
					break
				}
			}
			return nil, ErrBodyMalformed.refine("lone UTF-16 surrogate escape in a string at byte %d", off+i)
		case 'b':
			dst, i = append(dst, '\b'), i+2
		case 'f':
			dst, i = append(dst, '\f'), i+2
		case 'n':
			dst, i = append(dst, '\n'), i+2
		case 'r':
			dst, i = append(dst, '\r'), i+2
		case 't':
			dst, i = append(dst, '\t'), i+2
		default: // '"', '\\', '/'
			dst, i = append(dst, e), i+2
		}
	}
	return dst, nil
}

// hex4 decodes four hex digits, which json.Valid has checked.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
