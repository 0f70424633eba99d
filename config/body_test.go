package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEndpointBodyDefaultsByMethod(t *testing.T) {
	tests := []struct {
		method string
		body   BodyType
		want   BodyType
	}{
		{"POST", "", BodyJSON}, {"PUT", "", BodyJSON}, {"PATCH", "", BodyJSON},
		{"DELETE", "", BodyAny}, {"GET", "", BodyAny},
		{"POST", BodyAny, BodyAny}, {"DELETE", BodyJSON, BodyJSON},
	}
	for _, tt := range tests {
		e := Endpoint{Method: tt.method, Body: tt.body}
		if got := e.DeclaredBody(); got != tt.want {
			t.Errorf("%s with body %q: DeclaredBody() = %q, want %q", tt.method, tt.body, got, tt.want)
		}
	}
}

func TestJSONEndpointAcceptsOnlyJSONMediaTypes(t *testing.T) {
	json := Endpoint{Method: "POST"}
	anyBody := Endpoint{Method: "POST", Body: BodyAny}
	tests := []struct {
		ct        string
		n         int
		json, any bool
	}{
		{"application/json", 2, true, true},
		{"application/json; charset=utf-8", 2, true, true},
		{" Application/JSON ;charset=UTF-8", 2, true, true},
		{"application/merge-patch+json", 2, true, true},
		{"application/vnd.api+json; ext=x", 2, true, true},
		{"application/x-www-form-urlencoded", 2, false, true},
		{"text/plain", 2, false, true},
		{"multipart/form-data; boundary=x", 2, false, true},
		{"+json", 2, false, true},
		{"application/jsonp", 2, false, true},
		{"", 2, false, true},
		{"", 0, true, true},
		{"text/plain", 0, true, true},
	}
	for _, tt := range tests {
		if got := json.AcceptsBody(tt.ct, tt.n); got != tt.json {
			t.Errorf("json endpoint: AcceptsBody(%q, %d) = %v, want %v", tt.ct, tt.n, got, tt.json)
		}
		if got := anyBody.AcceptsBody(tt.ct, tt.n); got != tt.any {
			t.Errorf("any endpoint: AcceptsBody(%q, %d) = %v, want %v", tt.ct, tt.n, got, tt.any)
		}
	}
}

func TestEndpointBodyValidated(t *testing.T) {
	data := strings.Replace(minimal, "path: /v1/payments}", "path: /v1/payments, body: xml}", 1)
	data = strings.Replace(data, `capture"}`, `capture", body: any}`, 1)
	_, err := Parse([]byte(data))
	fes := fieldErrors(t, err)
	var got []string
	for _, fe := range fes {
		got = append(got, fe.Path+": "+fe.Reason)
	}
	want := []string{`endpoints[0].body: must be "json" or "any", got "xml"`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
}
