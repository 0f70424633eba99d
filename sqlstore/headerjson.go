package sqlstore

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// headerJSON is h as a JSON object, what the records' response_headers
// column (JSONB) stores: nil when h is empty. It writes what json.Marshal
// would (a nil value list is null, an invalid UTF-8 byte is U+FFFD, a
// control character is escaped) without reflection and in one string, so
// the finish's arguments need no copy of it (json.Marshal and the copy cost
// a first run's finish about seven allocations). Keys come in map order:
// JSONB keeps its own.
func headerJSON(h http.Header) *string {
	if len(h) == 0 {
		return nil
	}
	s := headerText(h)
	return &s
}

// headerText is headerJSON's text: "" when h is empty.
func headerText(h http.Header) string {
	if len(h) == 0 {
		return ""
	}
	n := 2
	for k, vs := range h {
		n += len(k) + 4
		for _, v := range vs {
			n += len(v) + 3
		}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	first := true
	for k, vs := range h {
		if !first {
			b.WriteByte(',')
		}
		first = false
		jsonString(&b, k)
		b.WriteByte(':')
		if vs == nil {
			b.WriteString("null")
			continue
		}
		b.WriteByte('[')
		for i, v := range vs {
			if i > 0 {
				b.WriteByte(',')
			}
			jsonString(&b, v)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String()
}

// jsonString writes s as a JSON string.
func jsonString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// decodeHeaders decodes a stored response_headers value into *h, as
// json.Unmarshal does. Every replay reads its headers back: the plain
// form JSONB gives (an object of string keys, each an array of strings or
// null, no escape in any string, valid UTF-8) is decoded in four
// allocations (the map's two, one string holding every key and value, one
// slice holding every value list, each list capped) instead of
// encoding/json's 20 for three headers, through reflection; anything
// else, or a map already there, goes to encoding/json.
func decodeHeaders(b []byte, h *http.Header) error {
	if *h == nil && utf8.Valid(b) && bytes.IndexByte(b, '\\') < 0 {
		p := headerScan{s: string(b)}
		keys, values := 0, 0
		if p.walk(func(string, bool) { keys++ }, func(string) { values++ }) {
			all := make([]string, 0, values)
			out := make(http.Header, keys)
			var key string
			start := 0
			null := false
			flush := func() {
				if null {
					out[key] = nil
				} else {
					out[key] = all[start:len(all):len(all)]
				}
			}
			p = headerScan{s: p.s}
			first := true
			p.walk(func(k string, isNull bool) {
				if !first {
					flush()
				}
				first = false
				key, null, start = k, isNull, len(all)
			}, func(v string) { all = append(all, v) })
			if !first {
				flush()
			}
			*h = out
			return nil
		}
	}
	return json.Unmarshal(b, h)
}

// headerScan reads the plain form of a stored header object (see
// decodeHeaders) from s.
type headerScan struct {
	s string
	i int
}

// space skips JSON white space.
func (p *headerScan) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// eat consumes c, after white space, if it comes next.
func (p *headerScan) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a string without escapes or control characters.
func (p *headerScan) str() (string, bool) {
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return "", false
	}
	end := strings.IndexByte(p.s[p.i+1:], '"')
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	for j := 0; j < len(v); j++ {
		if v[j] < 0x20 {
			return "", false
		}
	}
	p.i += end + 2
	return v, true
}

// walk reads the whole object, calling key for each member (null: its
// value is null) and value for each string of its array, in order. It
// reports false for anything outside the plain form.
func (p *headerScan) walk(key func(k string, null bool), value func(v string)) bool {
	if !p.eat('{') {
		return false
	}
	if !p.eat('}') {
		for {
			k, ok := p.str()
			if !ok || !p.eat(':') {
				return false
			}
			p.space()
			if strings.HasPrefix(p.s[p.i:], "null") {
				p.i += len("null")
				key(k, true)
			} else {
				if !p.eat('[') {
					return false
				}
				key(k, false)
				if !p.eat(']') {
					for {
						v, ok := p.str()
						if !ok {
							return false
						}
						value(v)
						if p.eat(']') {
							break
						}
						if !p.eat(',') {
							return false
						}
					}
				}
			}
			if p.eat('}') {
				break
			}
			if !p.eat(',') {
				return false
			}
		}
	}
	p.space()
	return p.i == len(p.s)
}
