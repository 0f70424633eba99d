package sqlstore

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// TestHeaderJSONStoresWhatJSONMarshalStored: the finish's header encoder
// gives back, once decoded, exactly the headers json.Marshal's encoding
// gave back: quotes, backslashes, control characters, non-ASCII text,
// invalid UTF-8 (U+FFFD), an empty and a nil value list.
func TestHeaderJSONStoresWhatJSONMarshalStored(t *testing.T) {
	for _, h := range []http.Header{
		{"Content-Type": {"application/json"}},
		{"X-A": {`q"uo\te`, "tab\tnew\nline\r", "\x01\x1f\x7f", "<&>", "caf\u00e9 \u2028 \U0001F600"}, "Location": {"/v1/p/1"}},
		{"X-Bad": {"a\xffb\xc3", "\xe2\x82"}, "X-Empty": {}, "X-Nil": nil, "": {""}},
	} {
		want, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		got := headerJSON(h)
		if got == nil {
			t.Fatalf("%v: nil", h)
		}
		var a, b http.Header
		if err := json.Unmarshal(want, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(*got), &b); err != nil {
			t.Fatalf("%q: not JSON: %v", *got, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("headerJSON decodes to %#v, json.Marshal to %#v", b, a)
		}
	}
	if headerJSON(nil) != nil || headerJSON(http.Header{}) != nil {
		t.Error("no headers must store NULL")
	}
}

// TestAStoredAnswersHeadersDecodeAsEncodingJSONDecodesThem: decodeHeaders
// gives what json.Unmarshal gives for the forms JSONB returns (spaces
// after ':' and ','), headerJSON's own, and every form it leaves to
// encoding/json (escapes, invalid UTF-8, malformed text), errors included.
func TestAStoredAnswersHeadersDecodeAsEncodingJSONDecodesThem(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `, `{"Location": ["/v1/things/1"], "Content-Type": ["application/json"]}`,
		`{"A":["x","y"],"B":[],"C":null,"":[""]}`, "{\n\t\"A\" :\r [ \"x\" , \"y\" ] }",
		`{"X-A": ["caf` + "\u00e9 \U0001F600" + `"]}`, `{"A": ["x"], "A": ["y"]}`,
		`{"X-A": ["q\"uote", "back\\slash", "\u0001"]}`, "{\"X-Bad\": [\"a\xffb\"]}",
		`null`, `[]`, `{"A": "x"}`, `{"A": [1]}`, `{"A": [null]}`, `{"A": ["x",]}`, `{"A": ["x"],}`,
		`{"A": ["x"]} x`, `{"A": nullx}`, `{"A": ["x"]`, `{"A": ["x`, "{\"A\": [\"x\ty\"]}", `{A: ["x"]}`,
	} {
		var want, got http.Header
		wantErr := json.Unmarshal([]byte(in), &want)
		gotErr := decodeHeaders([]byte(in), &got)
		if (wantErr == nil) != (gotErr == nil) || !reflect.DeepEqual(want, got) {
			t.Errorf("%q: decodeHeaders gives %#v (err %v), json.Unmarshal %#v (err %v)", in, got, gotErr, want, wantErr)
		}
	}
	// Into a map already there, it merges as json.Unmarshal does.
	h := http.Header{"Old": {"v"}}
	if err := decodeHeaders([]byte(`{"New": ["w"]}`), &h); err != nil || len(h) != 2 {
		t.Errorf("merged into an existing map: %#v, %v", h, err)
	}
	// Every value list is capped: an append to one never writes into the
	// next one's values.
	h = nil
	if err := decodeHeaders([]byte(`{"A": ["x"], "B": ["y"]}`), &h); err != nil {
		t.Fatal(err)
	}
	_ = append(h["A"], "z")
	_ = append(h["B"], "z")
	if h.Get("A") != "x" || h.Get("B") != "y" || len(h["A"]) != 1 || len(h["B"]) != 1 {
		t.Errorf("an append changed another list: %#v", h)
	}
}

// TestAReplaysHeadersDecodeInFourAllocations: a replay reads its stored
// headers back on every request; the plain form costs the map (two: its
// header and its one group), one string and one slice (encoding/json: 20
// for these three headers).
func TestAReplaysHeadersDecodeInFourAllocations(t *testing.T) {
	stored := []byte(`{"Location": ["/v1/things/1"], "Content-Type": ["application/json"], "X-Request-Id": ["r-1", "r-2"]}`)
	h := new(http.Header) // the record's field, allocated with the record
	allocs := testing.AllocsPerRun(100, func() {
		*h = nil
		if err := decodeHeaders(stored, h); err != nil || len(*h) != 3 {
			t.Fatalf("%#v, %v", *h, err)
		}
	})
	if allocs > 4 {
		t.Errorf("%v allocations to decode three headers, want at most 4", allocs)
	}
}
