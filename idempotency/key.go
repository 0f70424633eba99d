package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
)

// MaxKeyLen is the longest key accepted, in bytes. 255 leaves room for a
// UUID, a ULID or a client-prefixed composite key, while keeping the indexed
// key column and every log line that carries its hash small.
const MaxKeyLen = 255

// Errors returned by ParseKeyHeader. Each is wrapped, possibly with the byte
// offset of the problem in the header value, and never with the key itself:
// a key may be guessable or double as a secret, and error text ends up in
// logs and responses.
var (
	// ErrKeyMissing means the header is absent, blank, or the empty
	// sf-string "".
	ErrKeyMissing = &RequestError{Reason: "key missing"}
	// ErrKeyTooLong means the key is longer than MaxKeyLen.
	ErrKeyTooLong = &RequestError{Reason: "key longer than 255 characters"}
	// ErrKeyInvalidChar means the key contains a control character, DEL,
	// a byte outside ASCII, or (in the bare form) a space.
	ErrKeyInvalidChar = &RequestError{Reason: "key contains a character outside visible ASCII"}
	// ErrKeyMalformed means the value starts as an sf-string but is not one:
	// an unknown escape, no closing quote, or characters after it.
	ErrKeyMalformed = &RequestError{Reason: "malformed structured-field string"}
)

// Key is a validated idempotency key: 1 to MaxKeyLen bytes of printable
// ASCII. Its LogValue never reveals the raw key, so a Key can be passed to
// slog as is; formatting it with fmt does reveal it.
type Key string

var _ slog.LogValuer = Key("")

// ParseKeyHeader parses the value of an Idempotency-Key request header.
//
// draft-ietf-httpapi-idempotency-key-header defines the value as an RFC 9651
// sf-string ("8e03978e-40d5-43e8-bc93-6894a57f9324"). Many clients send the
// key unquoted, so a value that does not start with a double quote is taken
// as a bare token instead. Both forms yield the same Key: "abc" and abc name
// the same operation.
//
// Optional whitespace (SP, HTAB) around the value is ignored. An sf-string
// may contain spaces and the escapes \" and \\ and nothing else; a bare token
// is printable ASCII without spaces. The result must be 1 to MaxKeyLen bytes.
// Errors wrap ErrKeyMissing, ErrKeyTooLong, ErrKeyInvalidChar or
// ErrKeyMalformed.
func ParseKeyHeader(v string) (Key, error) {
	start, end := 0, len(v)
	for start < end && isOWS(v[start]) {
		start++
	}
	for end > start && isOWS(v[end-1]) {
		end--
	}
	if start == end {
		return "", ErrKeyMissing
	}
	if v[start] == '"' {
		return parseKeyString(v[:end], start)
	}
	return parseKeyToken(v[start:end], start)
}

// parseKeyToken checks a bare key. off is its offset in the header value, so
// that error positions refer to what the client sent.
func parseKeyToken(t string, off int) (Key, error) {
	// The length check comes first so that an oversized value is refused
	// without looking at it byte by byte.
	if len(t) > MaxKeyLen {
		return "", ErrKeyTooLong
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 0x21 || t[i] > 0x7e {
			if t[i] == ' ' {
				return "", ErrKeyInvalidChar.refine("a space at byte %d (a bare key has none: send the key as an sf-string, \"...\", to keep it)",
					off+i)
			}
			return "", ErrKeyInvalidChar.refine("%s at byte %d", byteKind(t[i]), off+i)
		}
	}
	return Key(t), nil
}

// parseKeyString parses the sf-string that starts at v[start] and must end
// at the end of v (RFC 9651 section 4.2.5).
func parseKeyString(v string, start int) (Key, error) {
	// Most keys have no escapes; only then is the key a copy rather than a
	// slice of v.
	var (
		buf     []byte
		escaped bool
	)
	for i := start + 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			if i+1 == len(v) {
				return "", ErrKeyMalformed.refine("unterminated string at byte %d", i)
			}
			if n := v[i+1]; n != '"' && n != '\\' {
				return "", ErrKeyMalformed.refine("invalid escape at byte %d", i)
			}
			if !escaped {
				buf = append(make([]byte, 0, i-start), v[start+1:i]...)
				escaped = true
			}
			i++
			buf = append(buf, v[i])
		case c == '"':
			if i+1 != len(v) {
				return "", ErrKeyMalformed.refine("trailing characters at byte %d", i+1)
			}
			k := v[start+1 : i]
			if escaped {
				k = string(buf)
			}
			switch {
			case k == "":
				return "", ErrKeyMissing
			case len(k) > MaxKeyLen:
				return "", ErrKeyTooLong
			}
			return Key(k), nil
		case c < 0x20 || c > 0x7e:
			return "", ErrKeyInvalidChar.refine("%s at byte %d", byteKind(c), i)
		case escaped:
			buf = append(buf, c)
		}
	}
	return "", ErrKeyMalformed.refine("unterminated string at byte %d", len(v))
}

// byteKind names the kind of a byte a key may not hold, never the byte
// itself: a space, a tab, a control character, or a byte outside ASCII.
func byteKind(c byte) string {
	switch {
	case c == ' ':
		return "a space"
	case c == '\t':
		return "a tab"
	case c < 0x20 || c == 0x7f:
		return "a control character"
	}
	return "a non-ASCII byte"
}

// isOWS reports whether c is optional whitespace (RFC 9110 section 5.6.3).
func isOWS(c byte) bool { return c == ' ' || c == '\t' }

// Hash returns the SHA-256 of the raw key bytes. It is what logs and metrics
// may carry in place of the key.
func (k Key) Hash() [32]byte { return sha256.Sum256([]byte(k)) }

// LogValue returns "sha256:" and the first 16 hex digits of Hash: enough to
// correlate log lines of one key, and not the key, which may be a secret or
// guessable.
func (k Key) LogValue() slog.Value {
	h := k.Hash()
	return slog.StringValue("sha256:" + hex.EncodeToString(h[:8]))
}
