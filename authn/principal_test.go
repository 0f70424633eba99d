package authn

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/clock"
)

func TestPrincipal(t *testing.T) {
	tests := []struct {
		p         Principal
		wantScope string
		wantErr   bool
	}{
		{Principal{Tenant: "acme", Subject: "alice"}, "acme/alice", false},
		{Principal{Subject: "alice"}, "default/alice", false},
		{Principal{Tenant: "acme", Subject: "user@example.com"}, "acme/user@example.com", false},
		{Principal{Tenant: "a/b", Subject: "c"}, "", true},
		{Principal{Tenant: "a", Subject: "b/c"}, "", true},
		{Principal{Tenant: "a", Subject: ""}, "", true},
		{Principal{Tenant: "a", Subject: "x\x00"}, "", true},
		{Principal{Tenant: "a", Subject: "x\u0085"}, "", true}, // C1 control
		{Principal{Tenant: "a", Subject: "\xff"}, "", true},
		{Principal{Tenant: strings.Repeat("t", 129), Subject: "s"}, "", true},
		{Principal{Tenant: strings.Repeat("t", 128), Subject: strings.Repeat("s", 128)}, strings.Repeat("t", 128) + "/" + strings.Repeat("s", 128), false},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if gotErr := err != nil; gotErr != tt.wantErr {
			t.Errorf("%q.Validate() = %v, want error %v", tt.p, err, tt.wantErr)
		}
		if !tt.wantErr && tt.p.Scope() != tt.wantScope {
			t.Errorf("%q.Scope() = %q, want %q", tt.p, tt.p.Scope(), tt.wantScope)
		}
	}
}

func TestContext(t *testing.T) {
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("FromContext on an empty context reported a principal")
	}
	want := Principal{Tenant: "acme", Subject: "alice"}
	got, ok := FromContext(WithPrincipal(context.Background(), want))
	if !ok || got != want {
		t.Fatalf("FromContext = %+v, %v; want %+v, true", got, ok, want)
	}
}

func TestIssue(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	v, err := NewVerifier(Config{Issuer: "dev", Audience: "idemcoord", HS256Secret: secret, Clock: clock.NewFake(testNow)})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Issue(secret, "dev", "idemcoord", Principal{Subject: "bob"}, time.Minute, testNow)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.VerifyToken(tok)
	if err != nil {
		t.Fatalf("VerifyToken: %v", err)
	}
	if want := (Principal{Tenant: DefaultTenant, Subject: "bob"}); p != want {
		t.Errorf("principal = %+v, want %+v", p, want)
	}

	late, err := NewVerifier(Config{Issuer: "dev", Audience: "idemcoord", HS256Secret: secret,
		Clock: clock.NewFake(testNow.Add(time.Minute + DefaultLeeway + time.Second))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := late.VerifyToken(tok); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("VerifyToken after ttl+leeway = %v, want ErrInvalidToken", err)
	}

	bad := []struct {
		name   string
		secret []byte
		p      Principal
		ttl    time.Duration
	}{
		{"short secret", secret[:31], Principal{Subject: "bob"}, time.Minute},
		{"bad principal", secret, Principal{Tenant: "a/b", Subject: "bob"}, time.Minute},
		{"zero ttl", secret, Principal{Subject: "bob"}, 0},
	}
	for _, tt := range bad {
		if _, err := Issue(tt.secret, "dev", "idemcoord", tt.p, tt.ttl, testNow); err == nil {
			t.Errorf("Issue(%s) succeeded, want an error", tt.name)
		}
	}
}
