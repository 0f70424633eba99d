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
