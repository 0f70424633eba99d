package replay

import "testing"

func TestFindSpansNamesExactlyThePointedValues(t *testing.T) {
	tests := []struct {
		name, doc string
		pointers  [][]string
		want      string // the document with each span replaced by X
	}{
		{"member", `{"a": "s", "b": 1}`, [][]string{{"a"}}, `{"a": X, "b": 1}`},
		{"nested and array", `{"c":{"d":[1, {"e" : true}]},"e":2}`, [][]string{{"c", "d", "1", "e"}}, `{"c":{"d":[1, {"e" : X}]},"e":2}`},
		{"object value", `{"k":{"x":[1,2]} }`, [][]string{{"k"}, {"k", "x"}}, `{"k":X }`},
		{"escaped key", `{"a/b":"v","a":{"b":"w"}}`, [][]string{{"a/b"}}, `{"a/b":X,"a":{"b":"w"}}`},
		{"absent", `{"a":1}`, [][]string{{"z"}, {"a", "b"}}, `{"a":1}`},
		{"escaped string", `{"a":"x\"y\u00e9","b":null}`, [][]string{{"a"}, {"b"}}, `{"a":X,"b":X}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans, err := findSpans([]byte(tt.doc), tt.pointers)
			if err != nil {
				t.Fatal(err)
			}
			got := string(splice([]byte(tt.doc), spans, func(span) []byte { return []byte("X") }))
			if got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := findSpans([]byte(`{"a":1} {"a":2}`), [][]string{{"a"}}); err == nil {
		t.Error("two documents: no error")
	}
}
