package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// TestCancelWithoutAVerdictChangesNothing: a cancel URL that does not
// answer 200 "cancelled" or 409 naming a stage gives no verdict: the
// DELETE is 502 cancel-undetermined and the record keeps running; an
// endpoint served in middleware mode has no cancel at all (409).
func TestCancelWithoutAVerdictChangesNothing(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(w http.ResponseWriter)
		middleware bool
		want       int
		wantType   string
	}{
		{name: "upstream error", want: http.StatusBadGateway, wantType: "cancel-undetermined",
			answer: func(w http.ResponseWriter) { w.WriteHeader(http.StatusInternalServerError) }},
		{name: "200 without the stage", want: http.StatusBadGateway, wantType: "cancel-undetermined",
			answer: func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }},
		{name: "409 without a stage", want: http.StatusBadGateway, wantType: "cancel-undetermined",
			answer: func(w http.ResponseWriter) { w.WriteHeader(http.StatusConflict) }},
		{name: "middleware mode", middleware: true, want: http.StatusConflict, wantType: "not-cancellable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			var once sync.Once
			t.Cleanup(func() { once.Do(func() { close(release) }) })
			mux := http.NewServeMux()
			mux.HandleFunc("POST /v1/things", func(w http.ResponseWriter, r *http.Request) {
				<-release
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{}`)
			})
			mux.HandleFunc("POST /internal/operations/{id}/cancel", func(w http.ResponseWriter, r *http.Request) { tt.answer(w) })
			st := openStore(t, 8)
			eps := endpoints(t, "    async: true\n    lease: 30s\n    resolve_path: /internal/operations/{operation_id}\n"+
				"    cancel_path: /internal/operations/{operation_id}/cancel\n")
			cfg := gateway.Config{Region: "test", Worker: "w", Store: st, Auth: verifier(t), Endpoints: eps,
				Recovery: gateway.RecoveryConfig{Disabled: true}}
			var g *gateway.Gateway
			var err error
			if tt.middleware {
				g, err = gateway.Wrap(cfg, mux)
			} else {
				up := httptest.NewServer(mux)
				t.Cleanup(up.Close)
				u, _ := url.Parse(up.URL)
				cfg.Next = gateway.NewProxy(u, nil)
				g, err = gateway.New(cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			startGateway(t, g)
			srv := httptest.NewServer(g)
			t.Cleanup(srv.Close)
			t.Cleanup(func() { g.Close() })
			alice := token(t, "alice")
			code, h, b := do(t, post(t, srv.URL+"/v1/things", alice, "k1", `{}`))
			if code != http.StatusAccepted {
				t.Fatalf("POST: %s", describe(code, h, b))
			}
			op := h.Get(gateway.HeaderOperationID)
			req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v1/operations/"+op, nil)
			req.Header.Set("Authorization", alice)
			code, h, b = do(t, req)
			if code != tt.want || !strings.Contains(b, "/"+tt.wantType+`"`) {
				t.Fatalf("DELETE: %s, want %d %s", describe(code, h, b), tt.want, tt.wantType)
			}
			rec, err := st.Lookup(context.Background(), "t/alice", uuid.MustParse(op))
			if err != nil || rec.State.Terminal() {
				t.Fatalf("record %s (%v), want it still running", rec.State, err)
			}
			once.Do(func() { close(release) })
			g.Close()
			if rec, _ := st.Lookup(context.Background(), "t/alice", uuid.MustParse(op)); rec.State != idempotency.Completed {
				t.Fatalf("record %s after the run, want COMPLETED", rec.State)
			}
		})
	}
}
