package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"net/url"
	"strings"
	"sync"
)

// FingerprintV1 is the version number of the fingerprint algorithm below; it
// is stored with every record. Any change to what ComputeFingerprint hashes,
// or how, is a new version: a record written under v1 must keep matching its
// retries after an upgrade.
const FingerprintV1 = 1

// Errors returned by ComputeFingerprint. Both are wrapped with detail that
// never quotes the body.
var (
	// ErrBodyTooLarge means the body is longer than FingerprintOptions.MaxBytes.
	ErrBodyTooLarge = &RequestError{Reason: "request body over the size cap"}
	// ErrBodyMalformed means a body sent (or sniffed) as JSON is not valid
	// JSON, has duplicate object keys, or has a number outside the limits.
	ErrBodyMalformed = &RequestError{Reason: "request body is not valid JSON"}
)

// FingerprintOptions says what of a request goes into its fingerprint. The
// zero value is usable: nothing excluded, null distinct from missing, and a
// DefaultMaxFingerprintBytes body cap.
type FingerprintOptions struct {
	// Exclude lists RFC 6901 JSON pointers ("/timestamp", "/meta/trace_id",
	// "/items/0/sig") of values dropped from a JSON body before hashing, for
	// fields a client legitimately changes between retries. An excluded
	// array element is removed and the elements after it move up. A pointer
	// that matches nothing is fine; "" (the whole document) is invalid.
	// Excludes do not apply to non-JSON bodies. Default none.
	Exclude []string
	// NullEqualsMissing drops object members whose value is null, so that
	// {"a":null} and {} have the same fingerprint. Default false: many APIs
	// read an explicit null as "clear this field", a different intent from
	// leaving it out.
	NullEqualsMissing bool
	// MaxBytes caps the body length in bytes, checked before the body is
	// parsed so that a huge body costs nothing. 0 means
	// DefaultMaxFingerprintBytes.
	MaxBytes int64
}

// Validate reports every invalid field, naming it and saying why.
func (o FingerprintOptions) Validate() error {
	var errs []error
	for i, p := range o.Exclude {
		if p == "" {
			errs = append(errs, fmt.Errorf("exclude[%d]: %q: the whole document cannot be excluded", i, p))
		} else if _, err := ParsePointer(p); err != nil {
			errs = append(errs, fmt.Errorf("exclude[%d]: %q: %w", i, p, err))
		}
	}
	if o.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("max_bytes: must not be negative, got %d", o.MaxBytes))
	}
	return errors.Join(errs...)
}

// ParsePointer splits a non-empty RFC 6901 JSON pointer into its unescaped
// reference tokens ("/a~1b/c" is ["a/b", "c"]). It is the one parser of the
// pointers a configuration names: fingerprint exclusions, secret fields,
// the fields a reference replay keeps. "" (the whole document) is refused.
func ParsePointer(p string) ([]string, error) {
	if p == "" || p[0] != '/' {
		return nil, errors.New(`a JSON pointer starts with "/"`)
	}
	toks := strings.Split(p[1:], "/")
	for i, t := range toks {
		for j := 0; j < len(t); j++ {
			if t[j] == '~' && (j+1 == len(t) || (t[j+1] != '0' && t[j+1] != '1')) {
				return nil, errors.New(`"~" must be followed by "0" or "1"`)
			}
		}
		// ~1 first: "~01" is the token "~1", not "/".
		toks[i] = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
	}
	return toks, nil
}

// Request is the part of an HTTP request that identifies the business intent.
// Headers other than Content-Type are left out on purpose: they carry
// transport detail (tracing, auth tokens that rotate) that differs between
// honest retries.
type Request struct {
	// Method is the HTTP method; it is compared case-insensitively.
	Method string
	// Path is the request path including path parameters, e.g.
	// /v1/payments/123. It is hashed as given: normalising it is the
	// router's job, and two spellings it routes apart must stay apart.
	Path string
	// Query is the raw query string, without "?". Parameter order does not
	// matter; the order of repeated values of one parameter does.
	Query string
	// ContentType is the Content-Type header. Only its media type is
	// hashed, lowercased; parameters such as charset are dropped.
	ContentType string
	// Body is the request body, at most FingerprintOptions.MaxBytes long.
	Body []byte
}

// Fingerprint identifies the content of a request under one algorithm
// version.
type Fingerprint struct {
	// Version is the algorithm that produced Sum, e.g. FingerprintV1.
	Version int
	// Sum is the SHA-256 of the framed canonical request.
	Sum [32]byte
}

// Equal reports whether f and g are the same fingerprint. Fingerprints of
// different versions are never equal, even for the same request: a caller
// that upgrades the algorithm must recompute, not compare across versions.
func (f Fingerprint) Equal(g Fingerprint) bool {
	// A plain comparison is enough: the fingerprint is no secret, and the
	// key it is stored under has already been matched.
	return f.Version == g.Version && f.Sum == g.Sum
}

// ComputeFingerprint returns the FingerprintV1 fingerprint of r.
//
// Two requests get the same fingerprint when they carry the same intent: the
// same method, path, query parameters (in any order), media type and body.
// A JSON body (application/json, any */*+json, or no Content-Type and a body
// starting with "{" or "[") is compared by value: key order and whitespace
// do not matter, numbers are compared as decimals (100, 100.0 and 1e2 are
// equal, as are 0 and -0), and strings exactly (no case or Unicode
// normalisation; "100" is not 100). Any other body is compared byte for byte;
// an empty body is never equal to a JSON one such as {}.
//
// A JSON body is refused (ErrBodyMalformed) when it is not one valid JSON
// value in UTF-8, has a duplicate object key, a number outside the limits,
// or a string with a lone UTF-16 surrogate escape ("\ud800"): parsers
// disagree on what such a body means, so the upstream might not read the
// intent the fingerprint compares.
//
// The canonical form is written without building a tree, and its buffers
// are reused: a JSON body costs about as much as json.Unmarshal of it, with
// working memory of a small multiple of its length (see
// BenchmarkFingerprint1MiBArray).
//
// It returns an error wrapping ErrBodyTooLarge if the body is over the cap,
// ErrBodyMalformed if a JSON body is refused, or the Validate error of
// invalid options.
func ComputeFingerprint(r Request, o FingerprintOptions) (Fingerprint, error) {
	return computeFingerprint(r, o, FingerprintV1)
}

// ComputeFingerprintVersion returns r's fingerprint under version:
// FingerprintV1 or FingerprintV2, which hash the same canonical request,
// each framed with its own version number (so their sums never match
// across versions). A v2 record also keeps its member digests
// (RequestMembers); a caller that writes v2 must store them.
func ComputeFingerprintVersion(r Request, o FingerprintOptions, version int) (Fingerprint, error) {
	if version != FingerprintV1 && version != FingerprintV2 {
		return Fingerprint{}, fmt.Errorf("idempotency: unknown fingerprint version %d", version)
	}
	return computeFingerprint(r, o, uint32(version))
}

// computeFingerprint is ComputeFingerprint under a given version.
func computeFingerprint(r Request, o FingerprintOptions, version uint32) (Fingerprint, error) {
	return computeFingerprintWith(r, o, version, nil)
}

// computeFingerprintWith is computeFingerprint that, when members is not
// nil, also sets it to the body's encoded member digests
// (ComputeFingerprintMembers), taken from the same canonical form.
func computeFingerprintWith(r Request, o FingerprintOptions, version uint32, members *[]byte) (Fingerprint, error) {
	if err := o.Validate(); err != nil {
		return Fingerprint{}, fmt.Errorf("idempotency: fingerprint options: %w", err)
	}
	limit := o.MaxBytes
	if limit == 0 {
		limit = DefaultMaxFingerprintBytes
	}
	if int64(len(r.Body)) > limit {
		return Fingerprint{}, ErrBodyTooLarge.refine("%d bytes, cap %d", len(r.Body), limit)
	}
	mt := mediaType(r.ContentType)
	var canon *canonicaliser
	if isJSONBody(mt, r.Body) {
		var err error
		if canon, err = canonicalJSON(r.Body, o); err != nil {
			return Fingerprint{}, err
		}
		defer canon.release()
		if members != nil {
			*members = canon.appendMembers(nil, -1)
		}
	}

	// Every field is length-prefixed so that no bytes can move from one field
	// to its neighbour ("/a" + "b=1" vs "/ab" + "=1") and keep the sum. The
	// fields before the body are framed into one reused buffer and hashed
	// at once with a reused hasher: the same bytes as the reference's
	// writeFramed writes field by field (fingerprint_frame_test.go), without
	// an allocation.
	fr := framerPool.Get().(*framer)
	defer fr.release()
	b := appendFramed(fr.buf[:0], "idemcoord fingerprint")
	b = binary.BigEndian.AppendUint64(b, 4)
	b = binary.BigEndian.AppendUint32(b, version)
	b = appendFramed(b, strings.ToUpper(r.Method))
	b = appendFramed(b, r.Path)
	if r.Query == "" {
		// What canonicalQuery makes of it: no parameters, sorted.
		b = binary.BigEndian.AppendUint64(b, 1)
		b = append(b, tagCanonical)
	} else {
		q := canonicalQuery(r.Query)
		b = binary.BigEndian.AppendUint64(b, uint64(len(q)))
		b = append(b, q...)
	}
	b = appendFramed(b, mt)
	var body []byte
	if canon != nil {
		b = binary.BigEndian.AppendUint64(b, uint64(len(canon.out)))
		body = canon.out // tagJSON and the canonical encoding
	} else {
		b = binary.BigEndian.AppendUint64(b, uint64(1+len(r.Body)))
		b = append(b, tagVerbatim)
		body = r.Body
	}
	fr.h.Reset()
	fr.h.Write(b) // a hash.Hash never returns a write error
	fr.h.Write(body)
	fr.buf = fr.h.Sum(b[:0])
	f := Fingerprint{Version: int(version)}
	copy(f.Sum[:], fr.buf)
	if members != nil && canon == nil {
		*members = appendBodyMembers(nil, fr, r.Body)
	}
	return f, nil
}

// framer frames and hashes one request's fields; framerPool reuses them.
type framer struct {
	h   hash.Hash
	buf []byte
}

var framerPool = sync.Pool{New: func() any { return &framer{h: sha256.New()} }}

// release gives fr back to the pool, dropping a buffer too large to keep
// (a very long path or query).
func (fr *framer) release() {
	if cap(fr.buf) > 64<<10 {
		fr.buf = nil
	}
	framerPool.Put(fr)
}

// appendFramed appends s preceded by its length as 8 big-endian bytes.
func appendFramed(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// Tags that start the canonical query and body, so that a value canonicalised
// one way can never collide with one kept verbatim.
const (
	tagCanonical = 'C'
	tagVerbatim  = 'V'
	tagJSON      = 'J'
)

// canonicalQuery returns the query with its parameters sorted by name, or
// the raw query if it does not parse (e.g. a bad %-escape): such a query is
// still compared exactly, just not order-insensitively.
func canonicalQuery(raw string) []byte {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return append([]byte{tagVerbatim}, raw...)
	}
	// Encode sorts by name and keeps the order of repeated values, which
	// may matter to the handler.
	return append([]byte{tagCanonical}, vals.Encode()...)
}

// mediaType returns the lowercased type/subtype of a Content-Type value.
// It does not use mime.ParseMediaType, which rejects values whose parameters
// are malformed; the parameters are dropped anyway.
func mediaType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(t))
}

// IsJSONMediaType reports whether a Content-Type value names a JSON media
// type, whose bodies ComputeFingerprint compares by value:
// application/json or any type/subtype+json (application/merge-patch+json,
// application/problem+json), in any case and with any parameters.
func IsJSONMediaType(contentType string) bool {
	return isJSONMediaType(mediaType(contentType))
}

// isJSONMediaType is IsJSONMediaType of a value mediaType has cut.
func isJSONMediaType(mt string) bool {
	return mt == "application/json" || (strings.HasSuffix(mt, "+json") && strings.Contains(mt, "/"))
}

// isJSONBody reports whether a body is compared as JSON. Without a
// Content-Type the body is sniffed, because clients that forget the header
// still expect key order not to matter; only objects and arrays are sniffed,
// so a plain-text body such as 42 keeps byte comparison.
func isJSONBody(mt string, body []byte) bool {
	if len(body) == 0 {
		// An empty body is "no body", even under a JSON media type: it is
		// hashed as such rather than refused as invalid JSON.
		return false
	}
	if mt != "" {
		return isJSONMediaType(mt)
	}
	for _, c := range body {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{', '[':
			return true
		}
		return false
	}
	return false
}
