package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway"
)

func TestRouterMatch(t *testing.T) {
	eps := []config.Endpoint{
		{Name: "create", Method: "POST", Path: "/v1/payments"},
		{Name: "capture", Method: "POST", Path: "/v1/payments/{id}/capture"},
		{Name: "get", Method: "GET", Path: "/v1/payments/{id}"},
		{Name: "search", Method: "GET", Path: "/v1/payments/search"},
		{Name: "axc", Method: "POST", Path: "/a/{x}/c"},
		{Name: "aby", Method: "POST", Path: "/a/b/{y}"},
		{Name: "root", Method: "POST", Path: "/"},
	}
	r, err := gateway.NewRouter(eps)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, path string
		want         string // endpoint name; "" means no match
	}{
		{"POST", "/v1/payments", "create"},
		{"GET", "/v1/payments", ""},
		{"post", "/v1/payments", ""},
		{"POST", "/V1/payments", ""},
		{"POST", "/v1/payments/", "create"},
		{"POST", "//v1//payments", "create"},
		{"POST", "/v1/payments/x/../../payments", "create"},
		{"POST", "/v1/payments/pay_1/capture", "capture"},
		{"GET", "/v1/payments/pay_1", "get"},
		{"GET", "/v1/payments/search", "search"},
		{"POST", "/v1/payments/search", ""},
		{"POST", "/v1/payments/search/capture", "capture"}, // literal branch fails, backtrack to {id}
		{"POST", "/v1/payments/pay_1/refund", ""},
		{"POST", "/a/b/c", "aby"},
		{"POST", "/a/z/c", "axc"},
		{"POST", "/a/b", ""},
		{"POST", "/", "root"},
		{"POST", "", "root"},
	}
	for _, tt := range tests {
		e, ok := r.Match(tt.method, tt.path)
		got := ""
		if ok {
			got = e.Name
		}
		if got != tt.want {
			t.Errorf("Match(%s, %q) = %q, want %q", tt.method, tt.path, got, tt.want)
		}
	}
}

func TestNewRouterErrors(t *testing.T) {
	tests := []struct {
		name string
		eps  []config.Endpoint
		want string
	}{
		{"same route", []config.Endpoint{
			{Name: "a", Method: "POST", Path: "/v1/{x}"},
			{Name: "b", Method: "POST", Path: "/v1/{y}"},
		}, `already routed to "a"`},
		{"bad pattern", []config.Endpoint{{Name: "a", Method: "POST", Path: "/v1/{x"}}, `endpoint "a": path`},
	}
	for _, tt := range tests {
		if _, err := gateway.NewRouter(tt.eps); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewRouter error = %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
}

// TestExampleConfigRoutes builds the router over the documented example
// configuration (config.Example): every endpoint it shows is routable.
func TestExampleConfigRoutes(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	c, err := config.Parse([]byte(config.Example))
	if err != nil {
		t.Fatalf("Parse(Example): %v", err)
	}
	if _, err := gateway.NewRouter(c.Endpoints); err != nil {
		t.Errorf("NewRouter: %v", err)
	}
}

func ExampleRouter_Match() {
	c, err := config.Parse([]byte(config.Example))
	if err != nil {
		panic(err)
	}
	r, err := gateway.NewRouter(c.Endpoints)
	if err != nil {
		panic(err)
	}
	e, ok := r.Match("POST", "/v1/payments/pay_123/capture")
	fmt.Println(e.Name, ok)
	p := e.Policy()
	fmt.Println(p.TTL, p.Lease, e.Failover)
	_, ok = r.Match("GET", "/v1/payments/pay_123")
	fmt.Println(ok)
	// Output:
	// capture-payment true
	// 24h0m0s 30s reject
	// false
}
