package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
)

// changedProblem is the part of a 422 that names what changed.
type changedProblem struct {
	Type           string    `json:"type"`
	OperationID    string    `json:"operation_id"`
	ChangedMembers *[]string `json:"changed_members"`
}

// changedMembersOf sends first then second under one fresh key and returns
// the 422's changed_members (nil when absent).
func changedMembersOf(t *testing.T, first, second *http.Request) *[]string {
	t.Helper()
	if st, hd, b := do(t, first); st != http.StatusCreated {
		t.Fatalf("first run: %s", describe(st, hd, b))
	}
	st, hd, b := do(t, second)
	var p changedProblem
	if err := json.Unmarshal([]byte(b), &p); err != nil || st != http.StatusUnprocessableEntity ||
		p.Type != "https://idemcoord.dev/problems/fingerprint-mismatch" || p.OperationID == "" {
		t.Fatalf("same key, another request: %s, want 422 fingerprint-mismatch", describe(st, hd, b))
	}
	return p.ChangedMembers
}

// TestThe422NamesExactlyTheChangedMembers: when a key comes back with
// another body, the 422 lists the RFC 6901 pointers of exactly the
// members that differ (never their values): nested objects, array
// elements, not a number written another way (100 vs 100.00), never an
// excluded field; a form names its parts, any other body says "body".
func TestThe422NamesExactlyTheChangedMembers(t *testing.T) {
	var runs atomic.Int64
	s := openStore(t, 8)
	srv := serveWrapped(t, s, "    fingerprint: {exclude: [/client_ts, /meta/trace]}\n", countingHandler(&runs))
	alice := token(t, "alice")
	const base = `{"amount":100,"currency":"EUR","metadata":{"order":"o-1","note":"n"},` +
		`"items":[{"sku":"a","qty":1},{"sku":"b","qty":1}],"client_ts":"t1","meta":{"trace":"x1","channel":"web"}}`
	tests := []struct {
		name, second string
		want         []string
	}{
		{"nested objects", `{"amount":250,"currency":"EUR","metadata":{"order":"o-2","note":"n"},` +
			`"items":[{"sku":"a","qty":1},{"sku":"b","qty":1}],"client_ts":"t1","meta":{"trace":"x1","channel":"web"}}`,
			[]string{"/amount", "/metadata/order"}},
		{"arrays", `{"amount":100,"currency":"EUR","metadata":{"order":"o-1","note":"n"},` +
			`"items":[{"sku":"a","qty":1},{"sku":"b","qty":2},{"sku":"c","qty":1}],"client_ts":"t1","meta":{"trace":"x1","channel":"web"}}`,
			[]string{"/items/1/qty", "/items/2/qty", "/items/2/sku"}},
		{"number forms are no change", `{"amount":100.00,"currency":"USD","metadata":{"order":"o-1","note":"n"},` +
			`"items":[{"sku":"a","qty":1.0},{"sku":"b","qty":1e0}],"client_ts":"t1","meta":{"trace":"x1","channel":"web"}}`,
			[]string{"/currency"}},
		{"excluded fields are never listed", `{"amount":100,"currency":"EUR","metadata":{"order":"o-1","note":"m"},` +
			`"items":[{"sku":"a","qty":1},{"sku":"b","qty":1}],"client_ts":"t2","meta":{"trace":"x2","channel":"app"}}`,
			[]string{"/meta/channel", "/metadata/note"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "members-" + strings.ReplaceAll(tt.name, " ", "-")
			got := changedMembersOf(t, post(t, srv.URL+"/v1/things", alice, key, base), post(t, srv.URL+"/v1/things", alice, key, tt.second))
			if got == nil {
				t.Fatalf("no changed_members, want %q", tt.want)
			}
			if diff := cmp.Diff(tt.want, *got); diff != "" {
				t.Errorf("changed_members (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("form parts", func(t *testing.T) {
		srv := serveWrapped(t, s, "    body: multipart\n", countingHandler(&runs))
		doc := formPart{name: "doc", fileName: "a.pdf", contentType: "application/pdf", value: "%PDF-1.7"}
		got := changedMembersOf(t,
			upload(t, srv.URL+"/v1/things", alice, "members-form", "b1", formPart{name: "amount", value: "100"}, doc),
			upload(t, srv.URL+"/v1/things", alice, "members-form", "b2", doc, formPart{name: "amount", value: "200"}))
		if got == nil || !cmp.Equal(*got, []string{"amount"}) {
			t.Errorf("changed_members %v, want [amount]", got)
		}
	})
	t.Run("other bodies", func(t *testing.T) {
		srv := serveWrapped(t, s, "    body: any\n", countingHandler(&runs))
		text := func(body string) *http.Request {
			r := post(t, srv.URL+"/v1/things", alice, "members-text", body)
			r.Header.Set("Content-Type", "text/plain")
			return r
		}
		if got := changedMembersOf(t, text("amount=100"), text("amount=200")); got == nil || !cmp.Equal(*got, []string{"body"}) {
			t.Errorf("changed_members %v, want [body]", got)
		}
	})
}

// v1Claims is the store as an instance from before fingerprint version 2
// used it: its claims carry a v1 fingerprint and no member digests.
type v1Claims struct{ *sqlstore.Store }

func (s v1Claims) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	fp, err := req.Refingerprint(idempotency.FingerprintV1)
	if err != nil {
		return store.Claim{}, err
	}
	req.Fingerprint, req.Members = fp, nil
	return s.Store.Begin(ctx, req)
}

// TestARecordFromBeforeMemberDigestsStillAnswersAPlain422: a key claimed
// by an instance from before the upgrade (fingerprint v1, no member
// digests) still replays to the same request after it, and answers another
// request with a plain 422 that lists nothing.
func TestARecordFromBeforeMemberDigestsStillAnswersAPlain422(t *testing.T) {
	var runs atomic.Int64
	s := openStore(t, 8)
	old := serveWrapped(t, v1Claims{s}, "", countingHandler(&runs))
	upgraded := serveWrapped(t, s, "", countingHandler(&runs))
	alice := token(t, "alice")
	if st, hd, b := do(t, post(t, old.URL+"/v1/things", alice, "members-v1", `{"amount":1}`)); st != http.StatusCreated {
		t.Fatalf("first run on the old instance: %s", describe(st, hd, b))
	}
	if st, hd, b := do(t, post(t, upgraded.URL+"/v1/things", alice, "members-v1", `{"amount":1.0}`)); st != http.StatusCreated ||
		hd.Get("Idempotent-Replayed") != "true" {
		t.Errorf("same request after the upgrade: %s, want the replay", describe(st, hd, b))
	}
	got := changedMembersOf(t, post(t, upgraded.URL+"/v1/things", alice, "members-v1-b", `{"amount":1}`),
		post(t, upgraded.URL+"/v1/things", alice, "members-v1-b", `{"amount":2}`))
	if got == nil || !cmp.Equal(*got, []string{"/amount"}) {
		t.Errorf("a record made after the upgrade: changed_members %v, want [/amount]", got)
	}
	st, hd, b := do(t, post(t, upgraded.URL+"/v1/things", alice, "members-v1", `{"amount":2}`))
	var p changedProblem
	if json.Unmarshal([]byte(b), &p); st != http.StatusUnprocessableEntity || p.ChangedMembers != nil {
		t.Errorf("another request for the v1 record: %s, want a plain 422 without changed_members", describe(st, hd, b))
	}
	if runs.Load() != 2 {
		t.Errorf("upstream ran %d times, want 2 (one per key)", runs.Load())
	}
}
