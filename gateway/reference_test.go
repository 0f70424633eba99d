package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/gateway"
)

// things is an upstream that creates things owned by the calling actor
// and shows each only to its owner.
type things struct {
	mu      sync.Mutex
	byID    map[string]map[string]any
	owner   map[string]string
	creates atomic.Int64
}

func (u *things) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	actor := r.Header.Get(gateway.HeaderActor)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/things":
		id := "t" + string(rune('0'+u.creates.Add(1)))
		u.byID[id] = map[string]any{"id": id, "name": "first", "blob": strings.Repeat("x", 64)}
		u.owner[id] = actor
		w.Header().Set("Location", "/v1/things/"+id)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(u.byID[id])
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/things/"):
		id := strings.TrimPrefix(r.URL.Path, "/v1/things/")
		if u.byID[id] == nil || u.owner[id] != actor || actor == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(u.byID[id])
	default:
		http.Error(w, "no", http.StatusMethodNotAllowed)
	}
}

func get(t *testing.T, url, auth string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", auth)
	return r
}

func TestReferenceReplayShowsTheResourceAsItIsNowAndNeverRecreatesIt(t *testing.T) {
	s := openStore(t, 8)
	up := &things{byID: map[string]map[string]any{}, owner: map[string]string{}}
	srv := serveWrapped(t, s, "    replay: {mode: reference, resource_path: \"/v1/things/{resource_id}\", keep: [/id]}\n", up)
	alice, bob := token(t, "alice"), token(t, "bob")
	const key = "reference-key-01"
	create := func() (int, http.Header, string) {
		return do(t, post(t, srv.URL+"/v1/things", alice, key, `{"name":"first"}`))
	}

	status, h, body := create()
	if status != http.StatusCreated || !strings.Contains(body, `"name":"first"`) {
		t.Fatalf("first run: %d %s", status, body)
	}
	rec, err := s.Lookup(context.Background(), "t/alice", uuid.MustParse(h.Get(gateway.HeaderOperationID)))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Snapshot.ResourceID != "t1" || string(rec.Snapshot.Body) != `{"id":"t1"}` {
		t.Fatalf("stored resource %q body %s; want t1 and the kept fields only", rec.Snapshot.ResourceID, rec.Snapshot.Body)
	}

	up.mu.Lock()
	up.byID["t1"]["name"] = "renamed"
	up.mu.Unlock()
	status, h, body = create()
	if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || !strings.Contains(body, `"name":"renamed"`) ||
		h.Get("Location") != "/v1/things/t1" {
		t.Fatalf("replay after a change: %d replayed %q location %q %s; want the current representation",
			status, h.Get("Idempotent-Replayed"), h.Get("Location"), body)
	}

	if status, _, _ := do(t, get(t, srv.URL+"/v1/things/t1", bob)); status != http.StatusNotFound {
		t.Fatalf("bob reads alice's thing: %d, want 404", status)
	}

	up.mu.Lock()
	delete(up.byID, "t1")
	up.mu.Unlock()
	status, _, body = create()
	if status != http.StatusGone || !strings.Contains(body, "problems/resource-gone") {
		t.Fatalf("replay after delete: %d %s; want 410 resource-gone", status, body)
	}
	if n := up.creates.Load(); n != 1 {
		t.Fatalf("upstream created %d things, want 1", n)
	}
}

func TestOversizeSnapshotKeepsTheKeyFieldsAndTheResourceID(t *testing.T) {
	s := openStore(t, 8)
	up := &things{byID: map[string]map[string]any{}, owner: map[string]string{}}
	srv := serveWrapped(t, s, "    max_response_bytes: 32\n    replay: {keep: [/id]}\n", up)
	alice := token(t, "alice")
	if status, _, _ := do(t, post(t, srv.URL+"/v1/things", alice, "oversize-key-1", `{}`)); status != http.StatusCreated {
		t.Fatalf("first run: %d", status)
	}
	status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, "oversize-key-1", `{}`))
	if status != http.StatusCreated || body != `{"id":"t1"}` || h.Get("Idempotent-Body-Omitted") != "true" ||
		h.Get("Location") != "/v1/things/t1" {
		t.Fatalf("replay: %d %s omitted %q location %q; want the key fields, marked partial", status, body,
			h.Get("Idempotent-Body-Omitted"), h.Get("Location"))
	}
}
