package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// canonicalOf returns the streaming canonicaliser's output for a JSON body.
func canonicalOf(body []byte, o FingerprintOptions) ([]byte, error) {
	c, err := canonicalJSON(body, o)
	if err != nil {
		return nil, err
	}
	defer c.release()
	return bytes.Clone(c.out), nil
}

// checkMatchesReference fails t unless the streaming canonicaliser and the
// frozen reference agree on body: the same bytes whenever the new one
// accepts, the same refusal whenever the reference refuses, and a refusal
// of a body the reference accepted only for a lone surrogate escape.
func checkMatchesReference(t *testing.T, body []byte, o FingerprintOptions) {
	t.Helper()
	if o.Validate() != nil || !isJSONBody("application/json", body) {
		return // an empty body is hashed as no body, by code both share
	}
	want, refErr := refCanonicalBody("application/json", body, o)
	got, err := canonicalOf(body, o)
	switch {
	case refErr != nil && err == nil:
		t.Fatalf("body %q, %+v: reference refused (%v), streaming accepted", body, o, refErr)
	case refErr != nil:
		if !errors.Is(err, ErrBodyMalformed) || !errors.Is(refErr, ErrBodyMalformed) {
			t.Fatalf("body %q: errors %v and %v, want both ErrBodyMalformed", body, refErr, err)
		}
	case err != nil:
		if !hasLoneSurrogate(body) || !errors.Is(err, ErrBodyMalformed) {
			t.Fatalf("body %q, %+v: reference accepted, streaming refused: %v", body, o, err)
		}
	case !bytes.Equal(got, want):
		t.Fatalf("body %q, %+v: canonical form differs\nstreaming %q\nreference %q", body, o, got, want)
	}
}

// hasLoneSurrogate reports whether a JSON text has a \u escape of a UTF-16
// surrogate that is not half of a pair. It is deliberately written apart
// from unescape, as an oracle.
func hasLoneSurrogate(body []byte) bool {
	s := string(body)
	for i := 0; i+5 < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // skip the escaped character, which may be a backslash
			continue
		}
		var r int
		fmt.Sscanf(s[i+2:i+6], "%04x", &r)
		switch {
		case r >= 0xdc00 && r <= 0xdfff:
			return true
		case r >= 0xd800 && r <= 0xdbff:
			var lo int
			if i+12 > len(s) || s[i+6:i+8] != `\u` {
				return true
			}
			fmt.Sscanf(s[i+8:i+12], "%04x", &lo)
			if lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

// diffOptions are the option sets every differential body is tried under.
var diffOptions = []FingerprintOptions{
	{},
	{NullEqualsMissing: true},
	{Exclude: []string{"/a", "/b/0", "/1", "/items/0/sig", "/meta/trace_id"}},
	{Exclude: []string{"/0", "/0", "/2", "/x/y"}, NullEqualsMissing: true},
	{Exclude: []string{"/", "/~0", "/a~1b", "/-", "/01"}},
}

func FuzzCanonicalMatchesReference(f *testing.F) {
	for _, s := range []string{
		`{"amount":100,"currency":"EUR"}`, `[1,2.50,-0,1e2,"x",null,true,false]`,
		`{"a":[1,{"c":"\u00e9\"\\","b":null}],"b":[{"z":1},{"y":"2"}]}`, ` [ ] `, `{}`,
		`{"a":1,"a":2}`, `[1e400, 123456789012345678901234567890.000]`,
		`{"":{"":[[],{}]},"\ud83d\ude00":"\ud800"}`, `["\udbff\udfff", "\ud800\u0041"]`,
		`{"items":[{"sig":"x","n":1},{"sig":"y"}],"meta":{"trace_id":"t","v":[0.10]}}`,
		`[[[[1]]],{"a":{"b":{"c":[-0.0e-3]}}}]`, `"str"`, `-12.5E+3`, `{"a/b":1,"~":2,"":3}`,
		`{"b":{"\u0061":1,"a":2}}`, `[00]`, `{"x":1}x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, o := range diffOptions {
			checkMatchesReference(t, body, o)
		}
		// The whole fingerprint too, sniffed and verbatim bodies included.
		for _, ct := range []string{"", "text/plain", "application/merge-patch+json; charset=utf-8"} {
			r := Request{Method: "POST", Path: "/p", Query: "b=1&a=2", ContentType: ct, Body: body}
			want, refErr := refComputeFingerprint(r, fuzzOpts)
			got, err := ComputeFingerprint(r, fuzzOpts)
			if err == nil && (refErr != nil || !got.Equal(want)) {
				t.Fatalf("ComputeFingerprint(%q, %q) = %x, reference %x, %v", ct, body, got.Sum, want.Sum, refErr)
			}
			if err != nil && refErr == nil && !hasLoneSurrogate(body) {
				t.Fatalf("ComputeFingerprint(%q, %q) refused what the reference accepted: %v", ct, body, err)
			}
		}
	})
}

// TestCanonicalMatchesReferenceOnGeneratedBodies runs the differential check
// on a few thousand seeded random documents, so that it runs on every
// `go test`, not only under -fuzz.
func TestCanonicalMatchesReferenceOnGeneratedBodies(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 13))
	accepted := 0
	const n = 3000
	for i := 0; i < n; i++ {
		var b strings.Builder
		genValue(rng, &b, 0)
		for _, o := range diffOptions {
			checkMatchesReference(t, []byte(b.String()), o)
		}
		if _, err := canonicalOf([]byte(b.String()), FingerprintOptions{}); err == nil {
			accepted++
		}
	}
	// Both sides of the comparison must be exercised.
	if accepted < n/4 || accepted > n*9/10 {
		t.Errorf("%d of %d generated bodies accepted; the generator no longer tests both sides", accepted, n)
	}
}

// genValue writes a random JSON value, biased towards what excludes and
// sorting care about: short repeated names, nulls, nested arrays, escapes.
func genValue(rng *rand.Rand, b *strings.Builder, depth int) {
	names := []string{"a", "b", "items", "meta", "sig", "trace_id", "x", "y", "0", "", "a/b", "~", `\u0061`, "é", `\ud83d\ude00`}
	k := rng.IntN(10)
	if depth > 4 {
		k = 5 + rng.IntN(5)
	}
	switch k {
	case 0, 1:
		b.WriteByte('{')
		n := rng.IntN(5)
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			// Names may repeat (a duplicate, refused by both), and "a"
			// and "\u0061" are one name.
			b.WriteString(`"` + names[rng.IntN(len(names))] + `" :`)
			genValue(rng, b, depth+1)
		}
		b.WriteByte('}')
	case 2, 3:
		b.WriteString("[ ")
		n := rng.IntN(5)
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteByte(',')
			}
			genValue(rng, b, depth+1)
		}
		b.WriteByte(']')
	case 4, 5:
		nums := []string{"0", "-0", "100", "100.00", "1e2", "1.0E+2", "-12.50", "0.001", "5E-1", "9007199254740993",
			"123456789012345678901234567890.000", "0.0e7", "-0.000", "7", "10", "1E-0", "2.5e-3", "1e1001"}
		b.WriteString(nums[rng.IntN(len(nums))])
	case 6, 7:
		strs := []string{`"x"`, `""`, `"\u00e9\/"`, `"é"`, `"\ud83d\ude00"`, `"a\"b\\c\n"`, `"\ufffd"`, `"\ud800"`, `"\t\u0000"`}
		b.WriteString(strs[rng.IntN(len(strs))])
	default:
		b.WriteString([]string{"null", "true", "false", "null"}[rng.IntN(4)])
	}
}

func TestAppendCanonicalNumberMatchesApd(t *testing.T) {
	lits := []string{"0", "-0", "0.000", "-0.0", "1", "-1", "10", "100", "100.00", "12.50", "-12.50", "0.001",
		"0.10", "1000000", "123456789012345678901234567890", "9007199254740993", "00", "0.5",
		"1" + strings.Repeat("0", 999), "0." + strings.Repeat("0", 998) + "1", "1" + strings.Repeat("0", 1000),
		"1.5e3", "1E+2", "-0e5", "1e1000000000"}
	for _, lit := range lits {
		want, wantErr := canonicalNumber(lit)
		got, err := appendCanonicalNumber(nil, []byte(lit))
		if (err != nil) != (wantErr != nil) || (err == nil && string(got) != want) {
			t.Errorf("appendCanonicalNumber(%.20q) = %q, %v; canonicalNumber = %q, %v", lit, got, err, want, wantErr)
		}
	}
}

func FuzzAppendCanonicalNumberMatchesApd(f *testing.F) {
	for _, s := range []string{"0", "-0.000", "100.00", "12.50", "0.001", "9007199254740993", "1e2", "-1.5E-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, lit string) {
		if !isJSONNumber(lit) {
			return
		}
		want, wantErr := canonicalNumber(lit)
		got, err := appendCanonicalNumber([]byte("prefix"), []byte(lit))
		if (err != nil) != (wantErr != nil) || (err == nil && string(got) != "prefix"+want) {
			t.Fatalf("appendCanonicalNumber(%q) = %q, %v; canonicalNumber = %q, %v", lit, got, err, want, wantErr)
		}
	})
}

// isJSONNumber reports whether s is exactly one RFC 8259 number.
func isJSONNumber(s string) bool {
	if s == "" || strings.TrimLeft(s, "-0123456789.eE+") != "" {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}
