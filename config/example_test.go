package config_test

import (
	"fmt"
	"testing"

	"github.com/idemcoord/idemcoord/config"
)

func TestExample(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	c, err := config.Parse([]byte(config.Example))
	if err != nil {
		t.Fatalf("Parse(Example): %v", err)
	}
	if len(c.Endpoints) < 2 {
		t.Fatalf("Example has %d endpoints", len(c.Endpoints))
	}
	for _, e := range c.Endpoints {
		if err := e.Policy().Validate(); err != nil {
			t.Errorf("endpoint %s: policy: %v", e.Name, err)
		}
	}
	if _, err := c.Router(); err != nil {
		t.Errorf("Router: %v", err)
	}
	if _, err := c.AuthConfig(); err != nil {
		t.Errorf("AuthConfig: %v", err)
	}
}

func ExampleRouter_Match() {
	c, err := config.Parse([]byte(config.Example))
	if err != nil {
		panic(err)
	}
	r, err := c.Router()
	if err != nil {
		panic(err)
	}
	e, ok := r.Match("POST", "/v1/payments/pay_123/capture")
	fmt.Println(e.Name, ok)
	p := e.Policy()
	fmt.Println(p.TTL, p.Lease, p.Failover)
	_, ok = r.Match("GET", "/v1/payments/pay_123")
	fmt.Println(ok)
	// Output:
	// capture-payment true
	// 24h0m0s 30s reject
	// false
}
