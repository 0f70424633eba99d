package idempotency

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// changedBetween returns Changed of two JSON bodies under o, the second
// split as the first was.
func changedBetween(t *testing.T, first, second string, o FingerprintOptions) []string {
	t.Helper()
	stored, err := RequestMembers(Request{ContentType: "application/json", Body: []byte(first)}, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := stored.MarshalBinary()
	if stored, err = ParseMembers(b); err != nil {
		t.Fatal(err)
	}
	cur, err := MembersLike(stored, Request{ContentType: "application/json", Body: []byte(second)}, o)
	if err != nil {
		t.Fatal(err)
	}
	return Changed(stored, cur)
}

func TestChangedNamesExactlyTheMembersThatDiffer(t *testing.T) {
	excl := FingerprintOptions{Exclude: []string{"/client_ts", "/meta/trace", "/items/1"}}
	tests := []struct {
		name          string
		first, second string
		o             FingerprintOptions
		want          []string
	}{
		{"same", `{"amount":100,"currency":"EUR"}`, `{"currency":"EUR","amount":100}`, FingerprintOptions{}, nil},
		{"top level", `{"amount":100,"currency":"EUR"}`, `{"amount":200,"currency":"EUR"}`, FingerprintOptions{}, []string{"/amount"}},
		{"nested objects", `{"amount":1,"metadata":{"order":"o-1","note":"x"}}`, `{"amount":2,"metadata":{"order":"o-2","note":"x"}}`,
			FingerprintOptions{}, []string{"/amount", "/metadata/order"}},
		{"number forms are no change", `{"amount":100,"fee":1e2,"tax":0}`, `{"amount":100.00,"fee":100,"tax":-0}`, FingerprintOptions{}, nil},
		{"string is not a number", `{"amount":100}`, `{"amount":"100"}`, FingerprintOptions{}, []string{"/amount"}},
		{"array element", `{"items":[{"sku":"a","qty":1},{"sku":"b","qty":1}]}`, `{"items":[{"sku":"a","qty":1},{"sku":"b","qty":2}]}`,
			FingerprintOptions{}, []string{"/items/1/qty"}},
		{"array grows", `{"items":["a"]}`, `{"items":["a","b"]}`, FingerprintOptions{}, []string{"/items/1"}},
		{"member added and removed", `{"a":1,"b":2}`, `{"a":1,"c":2}`, FingerprintOptions{}, []string{"/b", "/c"}},
		{"excluded fields never listed", `{"amount":1,"client_ts":"t1","meta":{"trace":"x","id":"m"},"items":[1,2,3]}`,
			`{"amount":1,"client_ts":"t2","meta":{"trace":"y","id":"m"},"items":[1,9,3]}`, excl, nil},
		{"excluded and changed", `{"amount":1,"client_ts":"t1"}`, `{"amount":2,"client_ts":"t2"}`, excl, []string{"/amount"}},
		{"null equals missing", `{"a":1,"b":null}`, `{"a":1}`, FingerprintOptions{NullEqualsMissing: true}, nil},
		{"null is a value", `{"a":1,"b":null}`, `{"a":1}`, FingerprintOptions{}, []string{"/b"}},
		{"escaped names", `{"a/b":1,"m~n":1}`, `{"a/b":2,"m~n":2}`, FingerprintOptions{}, []string{"/a~1b", "/m~0n"}},
		{"object to scalar", `{"a":{"b":1}}`, `{"a":5}`, FingerprintOptions{}, []string{"/a", "/a/b"}},
		{"past the depth, the ancestor", `{"a":{"b":{"c":{"d":{"e":{"f":{"g":1}}}}}}}`, `{"a":{"b":{"c":{"d":{"e":{"f":{"g":2}}}}}}}`,
			FingerprintOptions{}, []string{"/a/b/c/d/e/f"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, changedBetween(t, tt.first, tt.second, tt.o)); diff != "" {
				t.Errorf("Changed (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTooManyMembersAreNamedByTheirAncestor: a body with more than
// MaxMembers leaves is digested at a shallower depth, so a change is named
// by the ancestor that holds it; a record keeps at most MaxMembers.
func TestTooManyMembersAreNamedByTheirAncestor(t *testing.T) {
	lines := func(changed int) string {
		var items []string
		for i := range 3 * MaxMembers {
			v := 0
			if i == changed {
				v = 1
			}
			items = append(items, fmt.Sprintf(`{"n":%d}`, v))
		}
		return `{"amount":1,"lines":[` + strings.Join(items, ",") + `]}`
	}
	m, err := JSONMembers([]byte(lines(-1)), FingerprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Len() > MaxMembers {
		t.Errorf("%d members kept, want at most %d", m.Len(), MaxMembers)
	}
	if got := changedBetween(t, lines(-1), lines(7), FingerprintOptions{}); !cmp.Equal(got, []string{"/lines"}) {
		t.Errorf("Changed = %q, want [/lines]", got)
	}
	// Wider than MaxMembers at the top: the whole document.
	var wide []string
	for i := range MaxMembers + 1 {
		wide = append(wide, fmt.Sprintf(`"k%d":1`, i))
	}
	first, second := "{"+strings.Join(wide, ",")+"}", "{"+strings.Join(wide, ",")[:len(strings.Join(wide, ","))-1]+"2}"
	if got := changedBetween(t, first, second, FingerprintOptions{}); !cmp.Equal(got, []string{""}) {
		t.Errorf("Changed = %q, want [\"\"] (the whole document)", got)
	}
}

func TestChangedOfOtherBodies(t *testing.T) {
	text := func(s string) Members {
		m, _ := RequestMembers(Request{ContentType: "text/plain", Body: []byte(s)}, FingerprintOptions{})
		return m
	}
	if got := Changed(text("a"), text("b")); !cmp.Equal(got, []string{"body"}) {
		t.Errorf("text bodies: %q, want [body]", got)
	}
	if got := Changed(text("a"), text("a")); got != nil {
		t.Errorf("same text: %q, want none", got)
	}
	js, _ := RequestMembers(Request{ContentType: "application/json", Body: []byte(`{"a":1}`)}, FingerprintOptions{})
	if got := Changed(js, text(`{"a":1}`)); !cmp.Equal(got, []string{"body"}) {
		t.Errorf("JSON then text: %q, want [body]", got)
	}
	form := func(v string) Members {
		return FormMembers([]Part{{Name: "file", Data: []byte("pdf")}, {Name: "amount", Data: []byte(v)}})
	}
	if got := Changed(form("1"), form("2")); !cmp.Equal(got, []string{"amount"}) {
		t.Errorf("forms: %q, want [amount]", got)
	}
	if got := Changed(Members{}, text("b")); got != nil {
		t.Errorf("no stored members (a v1 record): %q, want none", got)
	}
}

func TestFingerprintVersionsHashTheSameRequestApart(t *testing.T) {
	r := Request{Method: "POST", Path: "/v1/x", ContentType: "application/json", Body: []byte(`{"a":1}`)}
	v1, err := ComputeFingerprint(r, FingerprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ComputeFingerprintVersion(r, FingerprintOptions{}, FingerprintV1)
	v2, _ := ComputeFingerprintVersion(r, FingerprintOptions{}, FingerprintV2)
	if !v1.Equal(again) || v2.Version != FingerprintV2 || v2.Sum == v1.Sum {
		t.Errorf("v1 %x, v1 again %x, v2 %d %x: want v1 stable and v2 its own", v1.Sum, again.Sum, v2.Version, v2.Sum)
	}
}
