package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"slices"
	"sort"
)

// FingerprintV2 is FingerprintV1's algorithm under a new version number:
// a record fingerprinted under v2 also keeps its request's member
// digests (Members), so a request that reuses its key with another body
// is told which members changed. A v1 record has none: its mismatches
// get a plain 422.
const FingerprintV2 = 2

// Bounds on the member digests a record keeps. A record stores them with
// its fingerprint, so they bound what a key costs beside its answer:
// about 24 bytes a member (pointer, digest, length).
const (
	// MaxMemberDepth is how deep into a JSON body members are digested
	// one by one: a member deeper than this is part of the digest of its
	// ancestor at this depth, which a 422 names instead. Six levels name
	// /items/0/price/amount with room to spare.
	MaxMemberDepth = 6
	// MaxMembers caps the members a record keeps. A body with more at
	// MaxMemberDepth is digested at the deepest depth at which it has at
	// most this many (one, the whole document "", at worst): a 422 then
	// names the ancestor that holds the change.
	MaxMembers = 32
)

// Kinds of member digests: how a body was split into members.
const (
	membersJSON = 'J' // RFC 6901 pointers into a JSON body, at one depth
	membersForm = 'F' // the field names of a multipart/form-data body
	membersBody = 'B' // one member, "body": the body as bytes
)

// BodyMember is the one member of a body that is neither JSON nor a
// multipart form: a 422 names "body" when it changed.
const BodyMember = "body"

// errMembersMalformed means stored member digests do not decode.
var errMembersMalformed = errors.New("idempotency: stored member digests are malformed")

// memberSum is a member's digest: the first 8 bytes of a SHA-256. It
// only names what changed; whether the request changed at all is the
// fingerprint's call, so a collision (1 in 2^64) can hide a member from
// the list, never make two requests one.
type memberSum [8]byte

// Members are the per-member digests of one request body: never the
// values, only which member (an RFC 6901 pointer, a form field name, or
// "body") hashed to what. The zero value has no members (nothing to
// compare: a 422 lists none).
type Members struct {
	kind  byte
	depth int
	names []string // sorted
	sums  []memberSum
}

// Len returns the number of members.
func (m Members) Len() int { return len(m.names) }

// Names returns the members' names, sorted.
func (m Members) Names() []string { return slices.Clone(m.names) }

// MarshalBinary encodes m for storage with its record: a format byte, the
// kind, the depth, the count, and each member's name and digest.
func (m Members) MarshalBinary() ([]byte, error) {
	if m.kind == 0 {
		return nil, nil
	}
	b := []byte{1, m.kind, byte(m.depth)}
	b = binary.AppendUvarint(b, uint64(len(m.names)))
	for i, n := range m.names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = append(b, m.sums[i][:]...)
	}
	return b, nil
}

// ParseMembers decodes what MarshalBinary wrote. Empty input is the zero
// Members.
func ParseMembers(b []byte) (Members, error) {
	if len(b) == 0 {
		return Members{}, nil
	}
	if len(b) < 3 || b[0] != 1 {
		return Members{}, errMembersMalformed
	}
	m := Members{kind: b[1], depth: int(b[2])}
	b = b[3:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return Members{}, errMembersMalformed
	}
	b = b[k:]
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l+8 {
			return Members{}, errMembersMalformed
		}
		b = b[k:]
		m.names = append(m.names, string(b[:l]))
		m.sums = append(m.sums, memberSum(b[l:l+8]))
		b = b[l+8:]
	}
	return m, nil
}

// Changed returns the names of the members that differ between stored
// (a record's) and cur (a new request's, computed with MembersLike
// stored): present in one and not the other, or with another digest,
// sorted. Bodies split differently (a JSON body then a form) differ as
// a whole: ["body"]. Nil when stored has no members (a v1 record) or
// none differ (the request differs elsewhere: method, path, query, media
// type or Idempotency-First-Sent).
func Changed(stored, cur Members) []string {
	if stored.kind == 0 {
		return nil
	}
	if stored.kind != cur.kind || stored.depth != cur.depth {
		return []string{BodyMember}
	}
	var out []string
	i, j := 0, 0
	for i < len(stored.names) || j < len(cur.names) {
		switch {
		case j == len(cur.names) || (i < len(stored.names) && stored.names[i] < cur.names[j]):
			out = append(out, stored.names[i])
			i++
		case i == len(stored.names) || cur.names[j] < stored.names[i]:
			out = append(out, cur.names[j])
			j++
		default:
			if stored.sums[i] != cur.sums[j] {
				out = append(out, stored.names[i])
			}
			i++
			j++
		}
	}
	return out
}

// Part is one named member of a body that is split by name, such as the
// parts of a multipart/form-data body: Data is whatever identifies the
// part's content (its canonical form), all parts of one name together.
type Part struct {
	Name string
	Data []byte
}

// FormMembers digests a form's parts by name. Parts are merged by name
// (in the order given); with more than MaxMembers names, the first
// MaxMembers-1 in name order are kept and the rest are digested together
// as one member "…" (a 422 names "…" when one of them changed).
func FormMembers(parts []Part) Members {
	byName := map[string][]byte{}
	for _, p := range parts {
		byName[p.Name] = append(byName[p.Name], p.Data...)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	m := Members{kind: membersForm}
	for i, n := range names {
		if i == MaxMembers-1 && len(names) > MaxMembers {
			h := newMemberHash(restMember)
			for _, r := range names[i:] {
				h.write([]byte(r))
				h.write(byName[r])
			}
			m.names, m.sums = append(m.names, restMember), append(m.sums, h.sum())
			break
		}
		h := newMemberHash(n)
		h.write(byName[n])
		m.names, m.sums = append(m.names, n), append(m.sums, h.sum())
	}
	return m
}

// restMember names the form parts past MaxMembers, digested together.
const restMember = "…"

// BytesMembers is the one member "body" of a body compared byte for byte.
func BytesMembers(body []byte) Members {
	fr := framerPool.Get().(*framer)
	defer fr.release()
	m, _ := ParseMembers(appendBodyMembers(nil, fr, body))
	return m
}

// appendBodyMembers appends the encoded digests (MarshalBinary) of
// BytesMembers(body) to dst, hashed with fr's hasher: the body is not
// copied, as memberHash would.
func appendBodyMembers(dst []byte, fr *framer, body []byte) []byte {
	f := append(fr.buf[:0], memberPrefix...)
	f = binary.AppendUvarint(f, uint64(len(BodyMember)))
	f = append(f, BodyMember...)
	f = binary.AppendUvarint(f, uint64(len(body)))
	fr.h.Reset()
	fr.h.Write(f)
	fr.h.Write(body)
	fr.buf = fr.h.Sum(f[:0])
	if dst == nil {
		dst = make([]byte, 0, 5+len(BodyMember)+len(memberSum{}))
	}
	dst = append(dst, 1, membersBody, 0, 1, byte(len(BodyMember)))
	dst = append(dst, BodyMember...)
	return append(dst, fr.buf[:len(memberSum{})]...)
}

// memberHash digests one member: its name, then length-framed content.
type memberHash struct {
	h   [sha256.Size]byte
	buf []byte
}

func newMemberHash(name string) *memberHash {
	mh := &memberHash{}
	mh.write([]byte("idemcoord member v2"))
	mh.write([]byte(name))
	return mh
}

// write appends b, length-prefixed, to the digest input.
func (mh *memberHash) write(b []byte) {
	mh.buf = binary.AppendUvarint(mh.buf, uint64(len(b)))
	mh.buf = append(mh.buf, b...)
}

func (mh *memberHash) sum() memberSum {
	mh.h = sha256.Sum256(mh.buf)
	return memberSum(mh.h[:8])
}
