package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKeyHeader(t *testing.T) {
	long := strings.Repeat("k", MaxKeyLen)
	tests := []struct {
		name    string
		in      string
		want    Key
		wantErr error
	}{
		{name: "bare token", in: "8e03978e-40d5-43e8-bc93-6894a57f9324", want: "8e03978e-40d5-43e8-bc93-6894a57f9324"},
		{name: "bare token with punctuation", in: `a:b/c"d`, want: `a:b/c"d`},
		{name: "sf-string", in: `"8e03978e-40d5"`, want: "8e03978e-40d5"},
		{name: "sf-string and bare token agree", in: `"abc"`, want: "abc"},
		{name: "sf-string escapes", in: `"a\"b\\c"`, want: `a"b\c`},
		{name: "sf-string escape first", in: `"\\x"`, want: `\x`},
		{name: "sf-string with space", in: `"a b"`, want: "a b"},
		{name: "surrounding whitespace", in: " \tabc\t ", want: "abc"},
		{name: "surrounding whitespace sf-string", in: ` "abc" `, want: "abc"},
		{name: "255 bytes", in: long, want: Key(long)},
		{name: "255 bytes sf-string", in: `"` + long + `"`, want: Key(long)},
		{name: "255 bytes after escapes", in: `"` + long[2:] + `\\\\"`, want: Key(long[2:] + `\\`)},

		{name: "empty", in: "", wantErr: ErrKeyMissing},
		{name: "whitespace only", in: " \t ", wantErr: ErrKeyMissing},
		{name: "empty sf-string", in: `""`, wantErr: ErrKeyMissing},
		{name: "256 bytes", in: long + "k", wantErr: ErrKeyTooLong},
		{name: "256 bytes sf-string", in: `"` + long + `k"`, wantErr: ErrKeyTooLong},

		{name: "control char", in: "ab\x01cd", wantErr: ErrKeyInvalidChar},
		{name: "tab inside bare token", in: "ab\tcd", wantErr: ErrKeyInvalidChar},
		{name: "space inside bare token", in: "ab cd", wantErr: ErrKeyInvalidChar},
		{name: "DEL", in: "ab\x7fcd", wantErr: ErrKeyInvalidChar},
		{name: "non-ASCII", in: "caf\u00e9", wantErr: ErrKeyInvalidChar},
		{name: "invalid UTF-8", in: "ab\xffcd", wantErr: ErrKeyInvalidChar},
		{name: "control char in sf-string", in: "\"ab\x01cd\"", wantErr: ErrKeyInvalidChar},
		{name: "tab in sf-string", in: "\"ab\tcd\"", wantErr: ErrKeyInvalidChar},
		{name: "non-ASCII in sf-string", in: "\"caf\u00e9\"", wantErr: ErrKeyInvalidChar},

		{name: "unterminated", in: `"abc`, wantErr: ErrKeyMalformed},
		{name: "lone quote", in: `"`, wantErr: ErrKeyMalformed},
		{name: "unknown escape", in: `"a\nb"`, wantErr: ErrKeyMalformed},
		{name: "escaped closing quote", in: `"abc\"`, wantErr: ErrKeyMalformed},
		{name: "backslash at end", in: `"abc\`, wantErr: ErrKeyMalformed},
		{name: "trailing characters", in: `"abc"def`, wantErr: ErrKeyMalformed},
		{name: "two strings", in: `"abc" "def"`, wantErr: ErrKeyMalformed},
		{name: "sf parameters", in: `"abc";a=1`, wantErr: ErrKeyMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKeyHeader(tt.in)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ParseKeyHeader(%q) error = %v, want %v", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseKeyHeader(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if err != nil {
				checkKeyErrorText(t, err)
				if k := strings.Trim(tt.in, " \t\""); len(k) >= 4 && strings.Contains(err.Error(), k) {
					t.Errorf("error text %q contains the raw key", err)
				}
			}
		})
	}
}

// keyErrorText is every shape a ParseKeyHeader error may take: a sentinel,
// optionally followed by a fixed phrase and a position. Nothing from the
// header value can appear in it.
var keyErrorText = regexp.MustCompile(`^idempotency: (key missing|key longer than 255 characters|` +
	`key contains a character outside visible ASCII|malformed structured-field string)` +
	`(: (unterminated string |invalid escape |trailing characters |a tab |a control character |a non-ASCII byte )?at byte [0-9]+` +
	`|: a space at byte [0-9]+ \(a bare key has none: send the key as an sf-string, "\.\.\.", to keep it\))?$`)

// checkKeyErrorText fails if err's text is not one of the fixed shapes,
// which proves it carries nothing of the header value but a position.
func checkKeyErrorText(t *testing.T, err error) {
	t.Helper()
	if msg := err.Error(); !keyErrorText.MatchString(msg) {
		t.Errorf("error text %q is not one of the fixed shapes", msg)
	}
}

func TestParseKeyHeaderErrorPosition(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{in: "  ab\x01", want: "idempotency: key contains a character outside visible ASCII: a control character at byte 4"},
		{in: `"ab\x"`, want: "idempotency: malformed structured-field string: invalid escape at byte 3"},
		{in: ` "ab"c`, want: "idempotency: malformed structured-field string: trailing characters at byte 5"},
		{in: `"ab`, want: "idempotency: malformed structured-field string: unterminated string at byte 3"},
	}
	for _, tt := range tests {
		_, err := ParseKeyHeader(tt.in)
		if err == nil {
			t.Fatalf("ParseKeyHeader(%q) succeeded, want error", tt.in)
		}
		if diff := cmp.Diff(tt.want, err.Error()); diff != "" {
			t.Errorf("ParseKeyHeader(%q) error text mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestKeyHash(t *testing.T) {
	k := Key("8e03978e-40d5-43e8-bc93-6894a57f9324")
	if got, want := k.Hash(), sha256.Sum256([]byte(k)); got != want {
		t.Errorf("Hash() = %x, want %x", got, want)
	}
	if Key("a").Hash() == Key("A").Hash() {
		t.Error("Hash() is case-insensitive")
	}
}

func TestKeyLogValue(t *testing.T) {
	k := Key("secret-key-8e03978e")
	sum := sha256.Sum256([]byte(k))
	want := "sha256:" + hex.EncodeToString(sum[:])[:16]
	if got := k.LogValue().String(); got != want {
		t.Errorf("LogValue() = %q, want %q", got, want)
	}

	// Through a real handler, as a service would log it, both as an
	// attribute and nested in a group.
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("claim", "key", k, slog.Group("req", "key", k))
	out := buf.String()
	if strings.Contains(out, string(k)) {
		t.Errorf("log line %q contains the raw key", out)
	}
	if strings.Count(out, want) != 2 {
		t.Errorf("log line %q does not carry the key hash %q twice", out, want)
	}
}
