package idempotency

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkMembersMatchReference fails t unless the canonical walk and the
// reference (a decoded tree) give body the same encoded member digests,
// at the depth JSONMembers picks and at every fixed depth, whenever the
// fingerprint accepts body; and unless ComputeFingerprintMembers returns
// the same digests with the fingerprint ComputeFingerprintVersion gives.
func checkMembersMatchReference(t *testing.T, body []byte, o FingerprintOptions) {
	t.Helper()
	if o.Validate() != nil || !isJSONBody("application/json", body) {
		return
	}
	got, err := JSONMembers(body, o)
	if err != nil {
		return // refused by the fingerprint too: never stored
	}
	want, refErr := refJSONMembers(body, o)
	if refErr != nil {
		t.Fatalf("body %q, %+v: the reference refused (%v) what the walk digested", body, o, refErr)
	}
	gotB, _ := got.MarshalBinary()
	wantB, _ := want.MarshalBinary()
	if !bytes.Equal(gotB, wantB) {
		t.Fatalf("body %q, %+v:\nwalk      %q %x\nreference %q %x", body, o, got.names, gotB, want.names, wantB)
	}
	tree, _ := refDecodeMembers(body, o)
	for d := 0; d <= MaxMemberDepth; d++ {
		got, _ := jsonMembersAt(body, o, d)
		want, _ := refMembersAt(tree, d)
		gotB, _ := got.MarshalBinary()
		wantB, _ := want.MarshalBinary()
		if !bytes.Equal(gotB, wantB) {
			t.Fatalf("body %q, %+v, depth %d:\nwalk      %q\nreference %q", body, o, d, got.names, want.names)
		}
	}
	r := Request{Method: "POST", Path: "/p", ContentType: "application/json", Body: body}
	fp, members, err := ComputeFingerprintMembers(r, o)
	v2, _ := ComputeFingerprintVersion(r, o, FingerprintV2)
	if err != nil || !fp.Equal(v2) || !bytes.Equal(members, wantB) {
		t.Fatalf("ComputeFingerprintMembers(%q) = %x, %x, %v; want %x, %x", body, fp.Sum, members, err, v2.Sum, wantB)
	}
}

// TestMemberDigestsMatchTheReference: the member digests taken from the
// fingerprint's canonical form are byte for byte those of the first
// implementation (encoding/json into a tree), on a few thousand seeded
// random documents under every option set and on the 422 cases, so the
// digests records already store compare with those of new requests.
func TestMemberDigestsMatchTheReference(t *testing.T) {
	for _, s := range []string{
		`{"amount":100,"currency":"EUR"}`, `{"amount":100.00,"fee":1e2,"tax":-0}`, `[1,2.50,-0,1e2,"x",null,true,false]`,
		`{"a":[1,{"c":"\u00e9\"\\","b":null}],"b":[{"z":1},{"y":"2"}]}`, ` [ ] `, `{}`, `"str"`, `-12.5E+3`,
		`{"a/b":1,"~":2,"":3,"m~n":{"x/y":[]}}`, `{"a":{"b":{"c":{"d":{"e":{"f":{"g":1}}}}}}}`,
		`{"items":[{"sig":"x","n":1},{"sig":"y"}],"meta":{"trace_id":"t","v":[0.10]}}`,
		`{"lines":[` + strings.Repeat(`{"n":1},`, 3*MaxMembers) + `{"n":2}],"amount":1}`,
	} {
		for _, o := range diffOptions {
			checkMembersMatchReference(t, []byte(s), o)
		}
	}
	rng := rand.New(rand.NewPCG(29, 3))
	for range 3000 {
		var b strings.Builder
		genValue(rng, &b, 0)
		for _, o := range diffOptions {
			checkMembersMatchReference(t, []byte(b.String()), o)
		}
	}
	// Any other body: the one member "body", as memberHash digests it.
	for _, body := range []string{"", "plain text", "42"} {
		h := newMemberHash(BodyMember)
		h.write([]byte(body))
		want, _ := Members{kind: membersBody, names: []string{BodyMember}, sums: []memberSum{h.sum()}}.MarshalBinary()
		_, members, err := ComputeFingerprintMembers(Request{Method: "POST", ContentType: "text/plain", Body: []byte(body)}, FingerprintOptions{})
		got, _ := BytesMembers([]byte(body)).MarshalBinary()
		if err != nil || !bytes.Equal(members, want) || !bytes.Equal(got, want) {
			t.Errorf("body %q: ComputeFingerprintMembers %x (%v), BytesMembers %x, want %x", body, members, err, got, want)
		}
	}
}

// TestMemberDigestsCostOneAllocationBesideTheFingerprint: the fingerprint
// and member digests of a claim's body cost at most one allocation more
// than the fingerprint alone (the encoded digests the record stores),
// however many members it has: every claim computes them, replays
// included, so they must not cost the ~40 the decoded tree did.
func TestMemberDigestsCostOneAllocationBesideTheFingerprint(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what it is given")
	}
	for _, body := range []string{
		`{"amount":"12.50","currency":"EUR"}`,
		`{"amount":1250,"currency":"EUR","customer":{"id":"c-1","email":"a@b.c"},"items":[{"sku":"a","qty":1},{"sku":"b","qty":2}],"metadata":{"order":"o-1"}}`,
	} {
		r := Request{Method: "POST", Path: "/v1/things", ContentType: "application/json", Body: []byte(body)}
		alone := testing.AllocsPerRun(100, func() {
			if _, err := ComputeFingerprintVersion(r, FingerprintOptions{}, FingerprintV2); err != nil {
				t.Fatal(err)
			}
		})
		with := testing.AllocsPerRun(100, func() {
			if _, _, err := ComputeFingerprintMembers(r, FingerprintOptions{}); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%d-byte body: fingerprint %.0f allocations, with member digests %.0f", len(body), alone, with)
		if with > alone+1 {
			t.Errorf("%d-byte body: fingerprint %.0f allocations, with member digests %.0f (at most one more)", len(body), alone, with)
		}
	}
}
