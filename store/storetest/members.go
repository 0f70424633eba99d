package storetest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// v2Request is Request under FingerprintV2, carrying body's member
// digests as the gateway sends them.
func v2Request(t *testing.T, actor, key, body string) store.ClaimRequest {
	t.Helper()
	r := idempotency.Request{Method: "POST", Path: "/v1/payments", ContentType: "application/json", Body: []byte(body)}
	req := Request(t, actor, key, body)
	fp, err := idempotency.ComputeFingerprintVersion(r, idempotency.FingerprintOptions{}, idempotency.FingerprintV2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := idempotency.RequestMembers(r, idempotency.FingerprintOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req.Fingerprint = fp
	req.Members, _ = m.MarshalBinary()
	return req
}

// TestMemberDigestsAreStoredWithTheRecordAndNamedOnAMismatch: the member
// digests a claim carries are stored with the new record, whether it
// claims alone or in a batch of concurrent first runs, and a later claim
// of the key with another request (a Mismatch) reads them back byte for
// byte, from which the changed members are named; a claim without them
// (a v1 record) stores none; a purge erases them with the bodies.
func (h suite) TestMemberDigestsAreStoredWithTheRecordAndNamedOnAMismatch(t *testing.T) {
	ctx := context.Background()
	s := h.Open(t, NewClock())
	const first = `{"amount":100,"metadata":{"order":"o-1","note":"n"}}`
	reqs := make([]store.ClaimRequest, 8)
	for i := range reqs {
		reqs[i] = v2Request(t, "tenant/alice", "members-"+string(rune('a'+i)), first)
	}
	var wg sync.WaitGroup
	for i := range reqs { // together, so that a batching store batches them
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c, err := s.Begin(ctx, reqs[i]); err != nil || c.Outcome != store.FirstRun {
				t.Errorf("claim %d: %v %v, want a first run", i, c.Outcome, err)
			}
		}()
	}
	wg.Wait()
	for i, req := range reqs {
		changed := v2Request(t, "tenant/alice", "members-"+string(rune('a'+i)), `{"amount":100.00,"metadata":{"order":"o-2","note":"n"}}`)
		c := MustBegin(t, s, changed, store.Mismatch)
		if !bytes.Equal(c.Record.Members, req.Members) || c.Record.Fingerprint.Version != idempotency.FingerprintV2 {
			t.Fatalf("record %d: members %x (v%d), want the claim's %x (v2)", i, c.Record.Members, c.Record.Fingerprint.Version, req.Members)
		}
		stored, err := idempotency.ParseMembers(c.Record.Members)
		if err != nil {
			t.Fatal(err)
		}
		cur, _ := idempotency.ParseMembers(changed.Members)
		if got := idempotency.Changed(stored, cur); len(got) != 1 || got[0] != "/metadata/order" {
			t.Errorf("record %d: changed %q, want [/metadata/order]", i, got)
		}
	}
	v1 := Request(t, "tenant/alice", "members-v1", first)
	MustBegin(t, s, v1, store.FirstRun)
	if c := MustBegin(t, s, Request(t, "tenant/alice", "members-v1", `{}`), store.Mismatch); c.Record.Members != nil {
		t.Errorf("v1 record: members %x, want none", c.Record.Members)
	}
	if _, err := s.Purge(ctx, "oncall@example.com", "erasure request 8", "tenant/alice"); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.Read(ctx, reqs[0].Scope); err != nil || rec.Members != nil {
		t.Errorf("after a purge: members %x (%v), want none", rec.Members, err)
	}
}
