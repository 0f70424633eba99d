package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/client"
)

// headerServer records the headers of every request and answers 503 to
// the first failFirst of them, 200 after.
type headerServer struct {
	failFirst int

	mu   sync.Mutex
	seen []http.Header
}

func (s *headerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, r.Header.Clone())
	n := len(s.seen)
	s.mu.Unlock()
	if n <= s.failFirst {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *headerServer) headers(name string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, h := range s.seen {
		out = append(out, h.Get(name))
	}
	return out
}

func TestDoRequestHeaders(t *testing.T) {
	var calls int
	var mu sync.Mutex
	source := func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return fmt.Sprintf("tok-%d", calls), nil
	}
	tests := []struct {
		name      string
		cfg       client.Config
		in        client.Intent
		failFirst int
		wantAuth  []string
		wantType  []string
		wantKey   []string
	}{
		{
			name:     "static token and default content type",
			cfg:      client.Config{Token: "s3cret"},
			in:       client.Intent{Method: "POST", Path: "/v1/x", Key: "k1", Body: []byte(`{}`)},
			wantAuth: []string{"Bearer s3cret"}, wantType: []string{"application/json"}, wantKey: []string{`"k1"`},
		},
		{
			name:      "token source asked before every attempt",
			cfg:       client.Config{TokenSource: source},
			in:        client.Intent{Method: "POST", Path: "/v1/x", Key: "k2", Body: []byte(`{}`)},
			failFirst: 1,
			wantAuth:  []string{"Bearer tok-1", "Bearer tok-2"},
			wantType:  []string{"application/json", "application/json"},
			wantKey:   []string{`"k2"`, `"k2"`},
		},
		{
			name: "caller's content type kept, token overrides caller's Authorization",
			cfg:  client.Config{Token: "mine"},
			in: client.Intent{Method: "PATCH", Path: "v1/x", Key: `a"b\c`, Body: []byte(`[]`),
				Header: http.Header{"Content-Type": {"application/merge-patch+json"}, "Authorization": {"Basic eA=="}}},
			wantAuth: []string{"Bearer mine"}, wantType: []string{"application/merge-patch+json"}, wantKey: []string{`"a\"b\\c"`},
		},
		{
			name:     "GET without key or body sends neither",
			in:       client.Intent{Method: "GET", Path: "/v1/operations/op-1"},
			wantAuth: []string{""}, wantType: []string{""}, wantKey: []string{""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &headerServer{failFirst: tt.failFirst}
			srv := httptest.NewServer(s)
			t.Cleanup(srv.Close)
			cfg := tt.cfg
			cfg.BaseURL, cfg.Clock = srv.URL+"/", newSleepRecorder()
			c, err := client.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Do(t.Context(), tt.in); err != nil {
				t.Fatalf("Do: %v", err)
			}
			got := [][]string{s.headers("Authorization"), s.headers("Content-Type"), s.headers("Idempotency-Key")}
			want := [][]string{tt.wantAuth, tt.wantType, tt.wantKey}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Authorization, Content-Type, Idempotency-Key per attempt (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDoRefusesInvalidIntent(t *testing.T) {
	s := &headerServer{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   client.Intent
	}{
		{"no method", client.Intent{Path: "/x", Key: "k"}},
		{"POST without key", client.Intent{Method: "POST", Path: "/x"}},
		{"key too long", client.Intent{Method: "POST", Path: "/x", Key: strings.Repeat("k", client.MaxKeyLen+1)}},
		{"key with newline", client.Intent{Method: "POST", Path: "/x", Key: "a\nb"}},
		{"key not ASCII", client.Intent{Method: "POST", Path: "/x", Key: "clé"}},
		{"absolute URL as path", client.Intent{Method: "POST", Path: "https://evil.example/x", Key: "k"}},
		{"key in header", client.Intent{Method: "POST", Path: "/x", Key: "k", Header: http.Header{"Idempotency-Key": {"other"}}}},
		{"key in header, lower case", client.Intent{Method: "POST", Path: "/x", Key: "k", Header: http.Header{"idempotency-key": {"other"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := c.Do(t.Context(), tt.in)
			if !errors.Is(err, client.ErrInvalidIntent) || resp != nil {
				t.Errorf("Do = %v, %v; want nil, ErrInvalidIntent", resp, err)
			}
		})
	}
	if _, err := c.PostJSON(t.Context(), "/x", "k", func() {}); !errors.Is(err, client.ErrInvalidIntent) {
		t.Errorf("PostJSON(unmarshalable) error = %v; want ErrInvalidIntent", err)
	}
	if n := len(s.headers("")); n != 0 {
		t.Errorf("server saw %d requests; want 0", n)
	}
}

func TestDoTokenSourceErrorStops(t *testing.T) {
	s := &headerServer{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	boom := errors.New("vault sealed")
	c, err := client.New(client.Config{BaseURL: srv.URL, TokenSource: func(context.Context) (string, error) { return "", boom }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(t.Context(), client.Intent{Method: "POST", Path: "/x", Key: "k"})
	if !errors.Is(err, boom) || errors.Is(err, client.ErrGaveUp) {
		t.Errorf("error = %v; want the source's error, not ErrGaveUp", err)
	}
	if n := len(s.headers("")); n != 0 {
		t.Errorf("server saw %d requests; want 0", n)
	}
}

func TestDoDefaultClientDoesNotFollowRedirects(t *testing.T) {
	var hits sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.Method+" "+r.URL.Path, true)
		if r.URL.Path == "/v1/x" {
			http.Redirect(w, r, "/v1/elsewhere", http.StatusSeeOther)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.PostJSON(t.Context(), "/v1/x", "k", payment{})
	if err != nil || resp.Status != http.StatusSeeOther || resp.Header.Get("Location") != "/v1/elsewhere" {
		t.Fatalf("PostJSON = %+v, %v; want the 303 itself and no error", resp, err)
	}
	if _, ok := hits.Load("GET /v1/elsewhere"); ok {
		t.Error("the redirect was followed as a GET")
	}
}
