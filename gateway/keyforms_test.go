package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// TestKeysAsClientsSendThemAreHonoured: the key forms real clients send —
// MDN's unquoted UUID, the draft's sf-string (a browser's quoted UUID or
// number), the characters of base64, ULIDs, prefixed and composite keys —
// are each accepted through HTTP: the first request runs once, and a
// retry spelt either way (quoted or bare: "abc" and abc name one key)
// replays it. The upstream gets the header exactly as the client sent it.
func TestKeysAsClientsSendThemAreHonoured(t *testing.T) {
	var (
		mu   sync.Mutex
		runs = map[string]int{} // by the header the upstream got
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		runs[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"op":%q}`, r.Header.Get(gateway.HeaderOperationID))
	})
	srv := serveWrapped(t, openStore(t, 8), "", h)
	alice := token(t, "alice")
	forms := []struct {
		name string
		sent string // the header value as the client sends it
		same []string
	}{
		{"MDN's example, an unquoted UUID", "8e03978e-40d5-43e8-bc93-6894a57f9324",
			[]string{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`}},
		{"a quoted UUID (RFC 8941 sf-string, as a browser sends it)", `"f81d4fae-7dec-41d0-a765-00a0c91e6bf6"`,
			[]string{"f81d4fae-7dec-41d0-a765-00a0c91e6bf6", ` "f81d4fae-7dec-41d0-a765-00a0c91e6bf6" `}},
		{"an upper-case UUID", "F81D4FAE-7DEC-41D0-A765-00A0C91E6BF7", nil},
		{"a quoted decimal number", `"6124738829154012345"`, []string{"6124738829154012345"}},
		{"base64 with + / =", "q83vEjRWeJA+/w==", []string{`"q83vEjRWeJA+/w=="`}},
		{"base64url", "q83vEjRWeJA-_w", nil},
		{"a ULID", "01ARZ3NDEKTSV4RRFFQ69G5FAV", nil},
		{"a prefixed, composite key", "order:42/attempt#1@client.example", []string{`"order:42/attempt#1@client.example"`}},
		{"a bare token with a quote inside", `a"b`, []string{`"a\"b"`}},
		{"an sf-string with spaces and escapes", `"pay run \\ 7 \"eu\""`, nil},
		{"optional whitespace around it", "\t  k-ows-1  ", []string{"k-ows-1", `"k-ows-1"`}},
		{"255 characters", strings.Repeat("k", 255), []string{`"` + strings.Repeat("k", 255) + `"`}},
	}
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			st, hd, first := do(t, post(t, srv.URL+"/v1/things", alice, f.sent, `{"amount":1}`))
			if st != http.StatusCreated || hd.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusCreated {
				t.Fatalf("first request with %q: %s status %q, want 201 created", f.sent, describe(st, hd, first),
					hd.Get(gateway.HeaderKeyStatus))
			}
			for _, again := range append([]string{f.sent}, f.same...) {
				st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, again, `{"amount":1}`))
				if st != http.StatusCreated || hd.Get(gateway.HeaderReplayed) != "true" || b != first {
					t.Errorf("retry with %q after %q: %s, want the first answer replayed (%s)", again, f.sent,
						describe(st, hd, b), first)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if n := runs[strings.Trim(f.sent, " \t")]; n != 1 {
				t.Errorf("the upstream ran %q %d times (with the header as sent), want once", f.sent, n)
			}
		})
	}
	t.Run("a lower-case header name on the wire", func(t *testing.T) {
		raw := "POST /v1/things HTTP/1.1\r\nHost: x\r\nauthorization: " + alice + "\r\n" +
			"content-type: application/json\r\nidempotency-key: \"lower-1\"\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
		for i, want := range []string{gateway.KeyStatusCreated, gateway.KeyStatusReplayed} {
			resp := rawRequest(t, srv.URL, raw)
			if resp.StatusCode != http.StatusCreated || resp.Header.Get(gateway.HeaderKeyStatus) != want {
				t.Errorf("request %d: %d %q, want 201 %q", i, resp.StatusCode, resp.Header.Get(gateway.HeaderKeyStatus), want)
			}
		}
	})
}

// TestKeysNoClientCanMeanAreRefusedAndNothingRuns: values that are no key
// (empty, too long, a space in a bare token, a broken sf-string, two
// headers) are 400 invalid-key or missing-key, and the upstream never
// sees them.
func TestKeysNoClientCanMeanAreRefusedAndNothingRuns(t *testing.T) {
	var mu sync.Mutex
	runs := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		runs++
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	})
	srv := serveWrapped(t, openStore(t, 8), "", h)
	alice := token(t, "alice")
	for _, v := range []string{`""`, strings.Repeat("k", 256), "two words", `"unterminated`, `"a\nb"`, `"abc"def`, "caf\u00e9"} {
		st, hd, b := do(t, post(t, srv.URL+"/v1/things", alice, v, `{}`))
		if st != http.StatusBadRequest || !strings.Contains(b, "invalid-key") || hd.Get(gateway.HeaderKeyStatus) != gateway.KeyStatusRejected {
			t.Errorf("key %q: %s, want 400 invalid-key, rejected", v, describe(st, hd, b))
		}
	}
	two := post(t, srv.URL+"/v1/things", alice, "k-a", `{}`)
	two.Header.Add("Idempotency-Key", "k-b")
	if st, hd, b := do(t, two); st != http.StatusBadRequest {
		t.Errorf("two keys: %s, want 400", describe(st, hd, b))
	}
	mu.Lock()
	defer mu.Unlock()
	if runs != 0 {
		t.Errorf("the upstream ran %d times, want never", runs)
	}
}

// rawRequest writes raw to the server at base and reads one answer.
func rawRequest(t *testing.T, base, raw string) *http.Response {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
