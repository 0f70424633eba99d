package admission

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"sort"
	"strings"

	"github.com/idemcoord/idemcoord/gateway/exchange"
)

// multipartMediaType is the media type the canonical form of a multipart
// body is fingerprinted under: the boundary, which clients pick at random
// per request, is never part of the intent.
const multipartMediaType = "multipart/form-data"

// errMultipartMalformed marks a multipart body that cannot be
// fingerprinted part by part; its refinements say why, for the client.
var errMultipartMalformed = exchange.NewInvalid("malformed multipart/form-data body")

// partReason says for a client why the multipart reader refused the
// body, from the reader's typed errors; any other is "a part does not
// parse" (its text names the reader's package).
func partReason(err error) string {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected EOF"
	case errors.Is(err, io.EOF):
		return "NextPart: EOF"
	}
	return "a part does not parse"
}

// formPart is one part of a multipart/form-data body as it is compared.
type formPart struct {
	name string
	// file is set for a part with a file name.
	file     bool
	fileName string
	// contentType is the part's declared Content-Type, normalised.
	contentType string
	// headers frames the part's other headers (partHeaders), empty when
	// it has none.
	headers []byte
	sum     [sha256.Size]byte
}

// canonicalMultipart returns the canonical form of a multipart/form-data
// body: its parts ordered by field name (parts of one name keep the order
// they were sent in, which may carry meaning: tags[]=a, tags[]=b), each
// written as its kind, field name, file name and declared Content-Type (for
// a file), its other headers (partHeaders) when it has any, and the
// SHA-256 of its bytes as sent. Two bodies with the same
// parts in another order, or another boundary, have the same form; one
// changed byte in any part changes it. body is already within the
// endpoint's cap; each part is hashed as it is read, never copied.
func canonicalMultipart(contentType string, body []byte) ([]byte, error) {
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil || params["boundary"] == "" {
		return nil, errMultipartMalformed.Refine("no boundary in the Content-Type", nil)
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	var parts []formPart
	for {
		// NextRawPart: the bytes as sent, with no transfer decoding, so
		// the fingerprint compares what the upstream receives.
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, errMultipartMalformed.Refine(partReason(err), err)
		}
		fp, err := readPart(p)
		p.Close()
		if err != nil {
			return nil, err
		}
		parts = append(parts, fp)
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].name < parts[j].name })
	var out bytes.Buffer
	for _, p := range parts {
		kind := "field"
		if p.file {
			kind = "file"
		}
		if len(p.headers) == 0 {
			frame(&out, []byte(kind), []byte(p.name), []byte(p.fileName), []byte(p.contentType), p.sum[:])
			continue
		}
		// Another kind, so a part with headers has one more field and
		// the form of a part without any (every form stored before the
		// headers counted) stays what it was.
		frame(&out, []byte(kind+"+headers"), []byte(p.name), []byte(p.fileName), []byte(p.contentType), p.headers, p.sum[:])
	}
	return out.Bytes(), nil
}

// readPart hashes one part. A part without a form-data field name is
// refused: servers disagree on what it means.
func readPart(p *multipart.Part) (formPart, error) {
	disp, dparams, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil || disp != "form-data" || dparams["name"] == "" {
		return formPart{}, errMultipartMalformed.Refine("a part has no form-data field name", nil)
	}
	fileName, isFile := dparams["filename"]
	fp := formPart{name: dparams["name"], file: isFile, fileName: fileName}
	if ct := p.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil {
			return formPart{}, errMultipartMalformed.Refine("a part's Content-Type does not parse", err)
		}
		fp.contentType = mime.FormatMediaType(mt, params)
	}
	fp.headers = partHeaders(p.Header)
	h := sha256.New()
	if _, err := io.Copy(h, p); err != nil {
		return formPart{}, errMultipartMalformed.Refine(partReason(err), err)
	}
	h.Sum(fp.sum[:0])
	return fp, nil
}

// partHeaders frames every header of a part but Content-Disposition and
// Content-Type (compared parsed), in name order, each value as sent (but
// Content-Transfer-Encoding, a case-insensitive token). Such a header may
// change what the upstream reads from the same bytes: a part declared
// quoted-printable holding "1=30" is read as "10" by a server that
// decodes it (Go's multipart.Reader does), as "1=30" without the
// declaration. So every one of them is part of the request; a client
// retrying sends the same headers.
func partHeaders(h textproto.MIMEHeader) []byte {
	names := make([]string, 0, len(h))
	for name := range h {
		if name != "Content-Disposition" && name != "Content-Type" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	var out bytes.Buffer
	for _, name := range names {
		for _, v := range h[name] {
			v = strings.TrimSpace(v)
			if name == "Content-Transfer-Encoding" {
				v = strings.ToLower(v)
			}
			frame(&out, []byte(name), []byte(v))
		}
	}
	return out.Bytes()
}

// frame appends each field preceded by its length, so no bytes can move
// from one field to the next and keep the form.
func frame(out *bytes.Buffer, fields ...[]byte) {
	for _, f := range fields {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(f)))
		out.Write(n[:])
		out.Write(f)
	}
}
