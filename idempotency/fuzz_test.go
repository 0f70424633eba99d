package idempotency

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// fuzzOpts lifts the body cap: re-encoding with indentation grows a body, and
// the cap is not what these properties are about.
var fuzzOpts = FingerprintOptions{MaxBytes: 1 << 30}

func FuzzFingerprint(f *testing.F) {
	seeds := []struct {
		method, path, query, ct, body string
	}{
		{"POST", "/v1/payments", "", "application/json", `{"amount":100,"currency":"EUR"}`},
		{"post", "/v1/payments", "b=2&a=1", "application/json; charset=utf-8", `{"a":[1,2.50,-0,1e2,"x",null,true,false],"b":{"c":"\u00e9\"\\"}}`},
		{"PUT", "/v1/items/7", "a=%zz", "", ` [{"z":1},{"y":"2"}] `},
		{"GET", "/", "", "", ""},
		{"POST", "/x", "", "application/problem+json", `"just a string"`},
		{"POST", "/x", "", "text/plain", "hello"},
		{"POST", "/x", "", "application/json", `{"a":1,"a":2}`},
		{"POST", "/x", "", "application/json", `[1e400, 123456789012345678901234567890.000]`},
		{"POST", "/x", "", "application/json", `{"":{"":[[],{}]},"\ud83d\ude00":"\ud800"}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.ct, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path, query, ct string, body []byte) {
		r := Request{Method: method, Path: path, Query: query, ContentType: ct, Body: body}
		f1, err1 := ComputeFingerprint(r, fuzzOpts)
		f2, err2 := ComputeFingerprint(r, fuzzOpts)
		if (err1 == nil) != (err2 == nil) || !f1.Equal(f2) {
			t.Fatalf("not deterministic: %x, %v then %x, %v", f1.Sum, err1, f2.Sum, err2)
		}

		r.ContentType = "application/json"
		want, err := ComputeFingerprint(r, fuzzOpts)
		if err != nil || len(body) == 0 {
			return // not JSON, or no body
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("ComputeFingerprint accepted a body encoding/json refuses: %v", err)
		}
		indented, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatalf("MarshalIndent: %v", err)
		}
		for _, b := range [][]byte{indented, appendReversed(nil, v)} {
			r.Body = b
			got, err := ComputeFingerprint(r, fuzzOpts)
			if err != nil {
				t.Fatalf("re-encoded body %q refused: %v", b, err)
			}
			if !got.Equal(want) {
				t.Fatalf("re-encoding %q as %q changed the fingerprint", body, b)
			}
		}

		if !appendToFirstString(&v) {
			return
		}
		r.Body, err = json.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		got, err := ComputeFingerprint(r, fuzzOpts)
		if err != nil {
			t.Fatalf("body with a longer string %q refused: %v", r.Body, err)
		}
		if got.Equal(want) {
			t.Fatalf("appending to a string value of %q did not change the fingerprint", body)
		}
	})
}

// appendReversed appends v as compact JSON with object keys in reverse
// order, the opposite of what encoding/json writes.
func appendReversed(b []byte, v any) []byte {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		slices.Reverse(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendReversed(b, k)
			b = append(b, ':')
			b = appendReversed(b, v[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendReversed(b, e)
		}
		return append(b, ']')
	default:
		enc, _ := json.Marshal(v) // strings, json.Number, bool, nil
		return append(b, enc...)
	}
}

// appendToFirstString appends "x" to the first string value of *v, in key
// order, and reports whether there was one.
func appendToFirstString(v *any) bool {
	switch x := (*v).(type) {
	case string:
		*v = x + "x"
		return true
	case []any:
		for i := range x {
			if appendToFirstString(&x[i]) {
				return true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			e := x[k]
			if appendToFirstString(&e) {
				x[k] = e
				return true
			}
		}
	}
	return false
}

func FuzzParseKeyHeader(f *testing.F) {
	for _, s := range []string{
		"8e03978e-40d5-43e8-bc93-6894a57f9324", `"abc"`, `"a\"b\\c"`, ` "a b" `, `""`, "", "\t",
		`"abc`, `"a\nb"`, `"abc"x`, "ab\x01", "caf\u00e9", strings.Repeat("k", MaxKeyLen+1),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := ParseKeyHeader(v)
		if err != nil {
			if k != "" {
				t.Errorf("ParseKeyHeader(%q) = %q with error %v", v, k, err)
			}
			checkKeyErrorText(t, err)
			return
		}
		if len(k) < 1 || len(k) > MaxKeyLen {
			t.Fatalf("ParseKeyHeader(%q) = key of %d bytes", v, len(k))
		}
		for i := 0; i < len(k); i++ {
			if k[i] < 0x20 || k[i] > 0x7e {
				t.Fatalf("ParseKeyHeader(%q) = key with byte %#x at %d", v, k[i], i)
			}
		}
		// Any accepted key survives the round trip through its sf-string.
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(string(k)) + `"`
		if k2, err := ParseKeyHeader(quoted); err != nil || k2 != k {
			t.Fatalf("ParseKeyHeader(%q) = %q, %v; want %q", quoted, k2, err, k)
		}
	})
}
