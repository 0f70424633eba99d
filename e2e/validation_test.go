package e2e

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestRefusedBeforeUpstream sends requests the gateway must refuse before
// claiming anything: invalid keys (design step 1: 1..255 visible ASCII
// characters, bare or as an sf-string), a missing key on a required
// endpoint, a body over the endpoint's cap, no bearer token. Each gets its
// 4xx and nothing reaches the upstream: the bank's and the payments table's
// totals do not move. A 255-character key, the longest valid one, then goes
// through, so the 256-character refusal is about length and nothing else.
func TestRefusedBeforeUpstream(t *testing.T) {
	c := sharedCluster(t)
	actor := uniqueName("refused")
	tok := token(t, c, actor)
	body := paymentBody("5.00", "order-refused")
	base := c.Regions[0].URL
	l := ledger{t, c}
	rows0, charges0 := l.totals()
	calls0 := shared.upstream.count()

	auth := "Authorization: Bearer " + tok
	long := strings.Repeat("k", 256)
	for _, tc := range []struct {
		name     string
		key      []string // Idempotency-Key header lines' values, written raw
		wantType string   // problem type suffix; "" accepts any 400
	}{
		{"empty value", []string{""}, ""},
		{"empty sf-string", []string{`""`}, ""},
		{"blank value", []string{"   "}, ""},
		{"256 characters", []string{long}, "/invalid-key"},
		{"256 characters quoted", []string{`"` + long + `"`}, "/invalid-key"},
		// net/http's server itself answers 400 to a control character in
		// any header value (before the gateway sees it); either layer's
		// 400 proves the same: refused, nothing ran.
		{"control character", []string{"abc\x01def"}, ""},
		{"control character quoted", []string{"\"abc\x01def\""}, ""},
		{"DEL", []string{"abc\x7fdef"}, ""},
		// A tab passes net/http (HTAB is allowed in header values): this
		// is the gateway's own check for control characters.
		{"tab inside", []string{"abc\tdef"}, "/invalid-key"},
		{"tab inside quoted", []string{"\"abc\tdef\""}, "/invalid-key"},
		{"non-ASCII", []string{"caf\u00e9-key"}, "/invalid-key"},
		{"non-ASCII quoted", []string{"\"caf\u00e9-key\""}, "/invalid-key"},
		{"space in a bare key", []string{"two words"}, "/invalid-key"},
		{"malformed sf-string", []string{`"unterminated`}, "/invalid-key"},
		{"two keys", []string{"key-one", "key-two"}, "/invalid-key"},
		{"missing", nil, "/missing-key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := []string{auth}
			for _, k := range tc.key {
				lines = append(lines, "Idempotency-Key: "+k)
			}
			r := rawExchange(t, base, http.MethodPost, "/v1/payments", lines, body)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("%v; want 400", r)
			}
			if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") {
				if tc.wantType != "" {
					t.Errorf("%v: not a problem document", r)
				} else {
					t.Logf("400 from net/http, not the gateway: %v", r)
				}
				return
			}
			p := r.problem(t)
			if tc.wantType != "" && !strings.HasSuffix(p.Type, tc.wantType) {
				t.Errorf("problem type %q; want ...%s", p.Type, tc.wantType)
			}
			if !strings.HasSuffix(p.Type, "/invalid-key") && !strings.HasSuffix(p.Type, "/missing-key") {
				t.Errorf("problem type %q; want invalid-key or missing-key", p.Type)
			}
			if !p.NewKeySafe || p.OperationID != "" || r.opID() != "" {
				t.Errorf("problem %+v, operation header %q; want new_key_safe and no operation", p, r.opID())
			}
		})
	}

	t.Run("body over the cap", func(t *testing.T) {
		// 2 MiB inside a valid payment document; the cap is 1 MiB.
		big := bytes.Join([][]byte{[]byte(`{"amount":"5.00","currency":"EUR","reference":"`),
			bytes.Repeat([]byte("x"), 2<<20), []byte(`"}`)}, nil)
		r := mustPost(t, base, tok, uniqueName("big-body"), big)
		if r.Status != http.StatusRequestEntityTooLarge {
			t.Fatalf("%v; want 413", r)
		}
		if p := r.problem(t); !strings.HasSuffix(p.Type, "/body-too-large") || !p.NewKeySafe {
			t.Errorf("problem %+v; want body-too-large, new_key_safe", p)
		}
	})

	t.Run("no bearer token", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
		defer cancel()
		r, err := postPayment(ctx, base, "", uniqueName("no-token"), body)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusUnauthorized || !strings.HasSuffix(r.problem(t).Type, "/unauthorized") {
			t.Errorf("%v; want 401 unauthorized", r)
		}
	})

	if rows, charges := l.totals(); rows != rows0 || charges != charges0 {
		t.Errorf("after the refused requests: %d payments rows and %d charges; before: %d and %d — something reached upstream",
			rows, charges, rows0, charges0)
	}
	if calls := shared.upstream.count() - calls0; calls != 0 {
		t.Errorf("the refused requests made %d upstream calls; want none", calls)
	}
	if rows, charges := l.byActor(scope(actor)); rows != 0 || charges != 0 {
		t.Errorf("refused actor has %d payments rows and %d charges; want none", rows, charges)
	}

	t.Run("255 characters is valid", func(t *testing.T) {
		key := uniqueName("k")
		key = strings.Repeat("v", 255-len(key)) + key
		r := rawExchange(t, base, http.MethodPost, "/v1/payments", []string{auth, "Idempotency-Key: " + key}, body)
		if r.Status != http.StatusCreated {
			t.Fatalf("%v; want 201", r)
		}
		l.exactlyOnce("255-character key", r.opID())
	})
}
