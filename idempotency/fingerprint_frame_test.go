package idempotency

import (
	"testing"
)

// TestFingerprintFramingMatchesReference: every field of the request
// (method in any case, path, query empty, sorted, unsorted or unparsable,
// media type with and without parameters, JSON, sniffed, verbatim and
// empty bodies) is framed exactly as the frozen reference frames it, so
// the framing can be written without allocating and stored v1
// fingerprints still match their retries.
func TestFingerprintFramingMatchesReference(t *testing.T) {
	for _, method := range []string{"POST", "post", "Patch"} {
		for _, path := range []string{"/v1/things", "/", "", "/a b/%41"} {
			for _, query := range []string{"", "a=1", "b=2&a=1&a=0", "%zz", "a=1;b=2", "x"} {
				for _, ct := range []string{"", "application/json", "Application/JSON; charset=utf-8", "text/plain", " text/csv ;x=y"} {
					for _, body := range []string{"", `{"amount":"12.50","currency":"EUR"}`, `[1,2]`, "plain text", "{not json"} {
						r := Request{Method: method, Path: path, Query: query, ContentType: ct, Body: []byte(body)}
						want, refErr := refComputeFingerprint(r, FingerprintOptions{})
						got, err := ComputeFingerprint(r, FingerprintOptions{})
						if (err != nil) != (refErr != nil) || !got.Equal(want) {
							t.Fatalf("%+v: fingerprint %x (%v), reference %x (%v)", r, got.Sum, err, want.Sum, refErr)
						}
					}
				}
			}
		}
	}
}

// TestFingerprintOfATypicalRequestAllocatesNothing: a small JSON body
// without a query is fingerprinted without a heap allocation (the hasher
// and the canonical form's buffers are reused), on every request of a
// coordinated endpoint.
func TestFingerprintOfATypicalRequestAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop what it is given")
	}
	r := Request{Method: "POST", Path: "/v1/things", ContentType: "application/json",
		Body: []byte(`{"amount":"12.50","currency":"EUR","meta":{"n":[1,2.5,null]}}`)}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := ComputeFingerprint(r, FingerprintOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per fingerprint, want 0", allocs)
	}
}
