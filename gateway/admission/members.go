package admission

import (
	"encoding/binary"
	"strings"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// fingerprintMembers returns c's FingerprintV2 fingerprint and the
// member digests of its body (idempotency.Members, encoded), stored with
// a new record so that a later 422 can name what a reused key's request
// changed: a JSON body's members, a multipart form's parts by field name,
// any other body as "body". A JSON or other body is canonicalised once
// for both (idempotency.ComputeFingerprintMembers: one allocation beside
// the fingerprint's, as every claim pays it, replays included). Members
// are nil when they cannot be computed: the record then answers a plain
// 422, as a v1 record does.
func fingerprintMembers(c *exchange.Request) (idempotency.Fingerprint, []byte, error) {
	if c.Endpoint.DeclaredBody() == config.BodyMultipart && len(c.Body) > 0 {
		fp, err := fingerprint(c, idempotency.FingerprintV2)
		if err != nil {
			return fp, nil, err
		}
		m, ok := bodyMembers(c, idempotency.Members{})
		if !ok {
			return fp, nil, nil
		}
		b, _ := m.MarshalBinary()
		return fp, b, nil
	}
	req := idempotency.Request{Method: c.R.Method, Path: c.R.URL.Path,
		Query: c.R.URL.RawQuery, ContentType: c.R.Header.Get("Content-Type"), Body: c.Body}
	return idempotency.ComputeFingerprintMembers(req, c.Policy.Fingerprint)
}

// changedMembers names the members of c's body that differ from those
// rec stored, split as rec's were; nil for a record without member
// digests (fingerprinted before version 2), when they do not decode, or
// when the body is the same (the request differs elsewhere).
func changedMembers(c *exchange.Request, rec store.Record) []string {
	if rec.Fingerprint.Version < idempotency.FingerprintV2 || len(rec.Members) == 0 {
		return nil
	}
	stored, err := idempotency.ParseMembers(rec.Members)
	if err != nil {
		return nil
	}
	cur, ok := bodyMembers(c, stored)
	if !ok {
		return nil
	}
	return idempotency.Changed(stored, cur)
}

// bodyMembers splits c's body into members, the way like's were split
// when like has any (idempotency.MembersLike).
func bodyMembers(c *exchange.Request, like idempotency.Members) (idempotency.Members, bool) {
	ct := c.R.Header.Get("Content-Type")
	if c.Endpoint.DeclaredBody() == config.BodyMultipart && len(c.Body) > 0 {
		canon, err := canonicalMultipart(ct, c.Body)
		if err != nil {
			return idempotency.Members{}, false
		}
		return idempotency.FormMembers(formParts(canon)), true
	}
	r := idempotency.Request{ContentType: ct, Body: c.Body}
	m, err := idempotency.MembersLike(like, r, c.Policy.Fingerprint)
	return m, err == nil
}

// formParts reads canonicalMultipart's form back into its parts: each is
// a run of length-prefixed fields (kind, name, file name, content type,
// [headers,] digest), and the whole run is what identifies the part.
func formParts(canon []byte) []idempotency.Part {
	var parts []idempotency.Part
	for len(canon) > 0 {
		start := canon
		var fields [6][]byte
		n := 5
		for i := 0; i < n; i++ {
			if len(canon) < 8 {
				return parts
			}
			l := binary.BigEndian.Uint64(canon)
			if uint64(len(canon)-8) < l {
				return parts
			}
			fields[i], canon = canon[8:8+l], canon[8+l:]
			if i == 0 && strings.HasSuffix(string(fields[0]), "+headers") {
				n = 6
			}
		}
		parts = append(parts, idempotency.Part{Name: string(fields[1]), Data: start[:len(start)-len(canon)]})
	}
	return parts
}
