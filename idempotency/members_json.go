package idempotency

import (
	"fmt"
)

// RequestMembers returns the member digests of r's body under o: a JSON
// body (as ComputeFingerprint decides) member by member (JSONMembers),
// any other body as the one member "body". A multipart form is split by
// its caller (FormMembers). It returns ErrBodyMalformed for a JSON body
// ComputeFingerprint refuses.
func RequestMembers(r Request, o FingerprintOptions) (Members, error) {
	if isJSONBody(mediaType(r.ContentType), r.Body) {
		return JSONMembers(r.Body, o)
	}
	return BytesMembers(r.Body), nil
}

// MembersLike returns r's member digests split as stored was (the same
// kind and, for JSON, the same depth, whatever r's own bounds would
// pick), for Changed to compare. A body of another kind than stored's is
// split its own way (Changed then names the whole body).
func MembersLike(stored Members, r Request, o FingerprintOptions) (Members, error) {
	if stored.kind != membersJSON || !isJSONBody(mediaType(r.ContentType), r.Body) {
		return RequestMembers(r, o)
	}
	return jsonMembersAt(r.Body, o, stored.depth)
}

// JSONMembers digests a JSON body member by member after o's exclusions
// (an excluded member is never a member) and null_equals_missing, values
// compared as the fingerprint compares them (numbers as decimals: 100 and
// 100.00 digest alike; key order does not matter). Each member is an RFC
// 6901 pointer: a scalar or an empty object or array above the depth the
// digests are taken at, or any value at that depth (its whole subtree).
// The depth is the deepest, up to MaxMemberDepth, at which the body has
// at most MaxMembers members.
func JSONMembers(body []byte, o FingerprintOptions) (Members, error) {
	return jsonMembersAt(body, o, -1)
}

// jsonMembersAt is JSONMembers cut at depth, or at JSONMembers' depth
// when depth is negative.
func jsonMembersAt(body []byte, o FingerprintOptions, depth int) (Members, error) {
	if err := o.Validate(); err != nil {
		return Members{}, fmt.Errorf("idempotency: fingerprint options: %w", err)
	}
	c, err := canonicalJSON(body, o)
	if err != nil {
		return Members{}, err
	}
	defer c.release()
	return ParseMembers(c.appendMembers(nil, depth))
}

// ComputeFingerprintMembers returns r's FingerprintV2 fingerprint and its
// member digests, encoded as Members.MarshalBinary encodes them (what a
// v2 record stores, store.ClaimRequest.Members), from one canonical form
// of the body: a JSON body's members as JSONMembers splits them, any
// other body as the one member "body". It costs what
// ComputeFingerprintVersion costs, plus one SHA-256 a member and one
// allocation, the encoded digests. It returns what ComputeFingerprint
// returns on a refused request, and no digests.
func ComputeFingerprintMembers(r Request, o FingerprintOptions) (Fingerprint, []byte, error) {
	var members []byte
	f, err := computeFingerprintWith(r, o, FingerprintV2, &members)
	if err != nil {
		return Fingerprint{}, nil, err
	}
	return f, members, nil
}
