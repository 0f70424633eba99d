package sqlstore

import (
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
	s := b.String()
	return &s
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
