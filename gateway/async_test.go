package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestAsyncSameKeySameTask: an async endpoint answers 202 with a status URL;
// a retry with the same key gets the same operation, never a second run;
// the status URL answers its actor only.
func TestAsyncSameKeySameTask(t *testing.T) {
	var runs atomic.Int64
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"export":"done"}`)
	})
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: openStore(t, 8), Auth: verifier(t),
		Endpoints: endpoints(t, "    async: true\n")}, h)
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	srv := httptest.NewServer(g)
	defer srv.Close()
	defer g.Close()
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) }) // a failing test must not leave the handler blocked
	alice, bob := token(t, "alice"), token(t, "bob")
	accepted := func() (string, string) {
		resp, err := http.DefaultClient.Do(post(t, srv.URL+"/v1/things", alice, "export-1", `{"kind":"csv"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("status %d, want 202", resp.StatusCode)
		}
		return resp.Header.Get("Location"), resp.Header.Get(gateway.HeaderOperationID)
	}
	loc1, op1 := accepted()
	loc2, op2 := accepted() // while running
	if loc1 != loc2 || op1 != op2 || loc1 != "/v1/operations/"+op1 {
		t.Fatalf("retry got another task: %s %s vs %s %s", loc1, op1, loc2, op2)
	}
	status := func(auth string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+loc1, nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	if code, v := status(alice); code != 200 || (v["state"] != "PENDING" && v["state"] != "IN_PROGRESS") {
		t.Fatalf("status while running: %d %v, want 200 PENDING or IN_PROGRESS", code, v)
	}
	if code, _ := status(bob); code != http.StatusNotFound {
		t.Fatalf("another actor reading the operation: %d, want 404", code)
	}
	releaseOnce.Do(func() { close(release) })
	testutil.Eventually(t, 10*time.Second, func() error {
		if code, v := status(alice); code != 200 || v["state"] != "COMPLETED" {
			return fmt.Errorf("operation never completed: %d %v", code, v)
		} else if resp := v["response"].(map[string]any); resp["status"].(float64) != 201 {
			t.Fatalf("stored response %v", resp)
		}
		return nil
	})
	loc3, op3 := accepted() // after completion
	if loc3 != loc1 || op3 != op1 {
		t.Fatalf("retry after completion got another task")
	}
	if runs.Load() != 1 {
		t.Fatalf("ran %d times, want 1", runs.Load())
	}
}
