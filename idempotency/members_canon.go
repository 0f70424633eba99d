package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"strconv"
)

// Member digests of a JSON body are taken from the fingerprint's own
// canonical encoding (canonicaliser.out), not from a decoded tree: that
// encoding is already what a member's digest hashes (type-tagged,
// length-prefixed, object members sorted, numbers canonical, exclusions
// and null_equals_missing applied), so a member is a slice of it. The
// walks below read it with the canonicaliser's pooled buffers and make one
// heap value: the encoded digests a record stores. A replay, whose claim
// never stores them, costs two walks of the canonical form and a SHA-256
// a member, no garbage beyond that one slice.

// memberEntry is one member found by a walk: its name (a slice of
// canonicaliser.mnames) and its digest.
type memberEntry struct {
	off, n int32
	sum    memberSum
}

// memberPrefix is what every member's digest starts with (memberHash's
// framing of "idemcoord member v2").
var memberPrefix = binary.AppendUvarint(nil, uint64(len("idemcoord member v2")))

func init() { memberPrefix = append(memberPrefix, "idemcoord member v2"...) }

// canonTag reads the value at i of a canonical encoding: its tag, and for
// a number, string, array or object the count or length that follows and
// the offset after it.
func canonTag(b []byte, i int) (tag byte, n uint64, next int) {
	tag = b[i]
	switch tag {
	case tagNumber, tagString, tagArray, tagObject:
		n, k := binary.Uvarint(b[i+1:])
		return tag, n, i + 1 + k
	}
	return tag, 0, i + 1
}

// skipCanon returns the offset after the canonical value at i.
func skipCanon(b []byte, i int) int {
	tag, n, j := canonTag(b, i)
	switch tag {
	case tagNumber, tagString:
		return j + int(n)
	case tagArray:
		for range n {
			j = skipCanon(b, j)
		}
	case tagObject:
		for range n {
			l, k := binary.Uvarint(b[j:])
			j = skipCanon(b, j+k+int(l))
		}
	}
	return j
}

// countCanon counts, per depth up to MaxMemberDepth, the values (nodes)
// and those that are members at any deeper cut (leaves: scalars and empty
// containers) of the canonical value at i, found at depth. It returns the
// offset after the value.
func countCanon(b []byte, i, depth int, leaves, nodes *[MaxMemberDepth + 1]int) int {
	nodes[depth]++
	tag, n, j := canonTag(b, i)
	if (tag != tagArray && tag != tagObject) || n == 0 {
		leaves[depth]++
		return skipCanon(b, i)
	}
	if depth == MaxMemberDepth {
		return skipCanon(b, i)
	}
	for range n {
		if tag == tagObject {
			l, k := binary.Uvarint(b[j:])
			j += k + int(l)
		}
		j = countCanon(b, j, depth+1, leaves, nodes)
	}
	return j
}

// memberDepth is the depth JSONMembers cuts the canonical value b at: the
// deepest, up to MaxMemberDepth, at which it has at most MaxMembers
// members.
func memberDepth(b []byte) int {
	var leaves, nodes [MaxMemberDepth + 1]int
	countCanon(b, 0, 0, &leaves, &nodes)
	depth, above := 0, 0
	for d := 0; d <= MaxMemberDepth; d++ {
		if above+nodes[d] > MaxMembers {
			break
		}
		depth = d
		above += leaves[d]
	}
	return depth
}

// appendMembers appends the encoded member digests (Members.MarshalBinary)
// of c's canonical JSON value cut at depth, or at memberDepth's when depth
// is negative, to dst.
func (c *canonicaliser) appendMembers(dst []byte, depth int) []byte {
	b := c.out[1:] // past tagJSON
	if depth < 0 {
		depth = memberDepth(b)
	}
	c.mptr, c.mnames, c.ments = c.mptr[:0], c.mnames[:0], c.ments[:0]
	c.walkMembers(b, 0, 0, depth)
	names := c.mnames
	slices.SortFunc(c.ments, func(x, y memberEntry) int {
		return bytes.Compare(names[x.off:x.off+x.n], names[y.off:y.off+y.n])
	})
	size := 3 + binary.MaxVarintLen64
	for _, e := range c.ments {
		size += binary.MaxVarintLen64 + int(e.n) + len(e.sum)
	}
	if dst == nil {
		dst = make([]byte, 0, size)
	}
	dst = append(dst, 1, membersJSON, byte(depth))
	dst = binary.AppendUvarint(dst, uint64(len(c.ments)))
	for _, e := range c.ments {
		dst = binary.AppendUvarint(dst, uint64(e.n))
		dst = append(dst, names[e.off:e.off+e.n]...)
		dst = append(dst, e.sum[:]...)
	}
	return dst
}

// walkMembers digests the members of the canonical value at i, found at
// depth k under the pointer c.mptr, cut at depth, and returns the offset
// after it: a non-empty object or array above the cut is walked into, any
// other value is one member.
func (c *canonicaliser) walkMembers(b []byte, i, k, depth int) int {
	if tag, n, j := canonTag(b, i); k < depth && (tag == tagArray || tag == tagObject) && n > 0 {
		mark := len(c.mptr)
		for e := range n {
			c.mptr = append(c.mptr[:mark], '/')
			if tag == tagObject {
				l, w := binary.Uvarint(b[j:])
				c.mptr = appendEscapedToken(c.mptr, b[j+w:j+w+int(l)])
				j += w + int(l)
			} else {
				c.mptr = strconv.AppendUint(c.mptr, e, 10)
			}
			j = c.walkMembers(b, j, k+1, depth)
		}
		c.mptr = c.mptr[:mark]
		return j
	}
	end := skipCanon(b, i)
	c.ments = append(c.ments, memberEntry{off: int32(len(c.mnames)), n: int32(len(c.mptr)),
		sum: c.memberSum(c.mptr, b[i:end])})
	c.mnames = append(c.mnames, c.mptr...)
	return end
}

// memberSum is newMemberHash(name) with value written, computed with c's
// reused hasher: the same digest without copying the value.
func (c *canonicaliser) memberSum(name, value []byte) memberSum {
	if c.mh == nil {
		c.mh = sha256.New()
	}
	c.mh.Reset()
	f := append(c.mbuf[:0], memberPrefix...)
	f = binary.AppendUvarint(f, uint64(len(name)))
	f = append(f, name...)
	f = binary.AppendUvarint(f, uint64(len(value)))
	c.mh.Write(f) // a hash.Hash never returns a write error
	c.mh.Write(value)
	c.mbuf = c.mh.Sum(f[:0])
	return memberSum(c.mbuf[:8])
}

// appendEscapedToken appends an object member name as an RFC 6901 token.
func appendEscapedToken(dst, name []byte) []byte {
	for _, ch := range name {
		switch ch {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, ch)
		}
	}
	return dst
}
