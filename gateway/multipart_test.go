package gateway_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
)

// formPart is one part of a test upload.
type formPart struct {
	name, fileName, contentType, value string
}

// upload builds a multipart/form-data request with the parts in the given
// order under the given boundary.
func upload(t *testing.T, url, auth, key, boundary string, parts ...formPart) *http.Request {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if err := mw.SetBoundary(boundary); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		if p.fileName != "" {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"; filename="`+p.fileName+`"`)
			h.Set("Content-Type", p.contentType)
		} else {
			h.Set("Content-Disposition", `form-data; name="`+p.name+`"`)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(p.value))
	}
	mw.Close()
	r, err := http.NewRequest(http.MethodPost, url, &b)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", auth)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	r.Header.Set("Idempotency-Key", key)
	return r
}

func TestMultipartUploadsAreFingerprintedByTheirParts(t *testing.T) {
	s := openStore(t, 8)
	var runs atomic.Int64
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The upstream gets the body as sent and can read it.
		if err := r.ParseMultipartForm(1 << 20); err != nil || r.MultipartForm.File["doc"] == nil {
			http.Error(w, "bad upload", http.StatusBadRequest)
			return
		}
		runs.Add(1)
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"ok":true}`))
	})
	srv := serveWrapped(t, s, "    body: multipart\n", upstream)
	alice := token(t, "alice")
	const key = "upload-key-0001"
	amount := formPart{name: "amount", value: "100"}
	note := formPart{name: "note", value: "invoice"}
	doc := formPart{name: "doc", fileName: "a.pdf", contentType: "application/pdf", value: "%PDF-1.7 content"}
	url := srv.URL + "/v1/things"

	tests := []struct {
		name     string
		req      *http.Request
		status   int
		replayed string
	}{
		{"first run", upload(t, url, alice, key, "boundary-one", amount, note, doc), http.StatusCreated, ""},
		{"same parts, other order and boundary", upload(t, url, alice, key, "boundary-two", doc, note, amount),
			http.StatusCreated, "true"},
		{"one changed byte in the file", upload(t, url, alice, key, "boundary-one", amount, note,
			formPart{name: "doc", fileName: "a.pdf", contentType: "application/pdf", value: "%PDF-1.7 contenT"}),
			http.StatusUnprocessableEntity, ""},
		{"another file name", upload(t, url, alice, key, "boundary-one", amount, note,
			formPart{name: "doc", fileName: "b.pdf", contentType: "application/pdf", value: doc.value}),
			http.StatusUnprocessableEntity, ""},
		{"another declared type", upload(t, url, alice, key, "boundary-one", amount, note,
			formPart{name: "doc", fileName: "a.pdf", contentType: "application/octet-stream", value: doc.value}),
			http.StatusUnprocessableEntity, ""},
		{"one changed byte in a field", upload(t, url, alice, key, "boundary-one",
			formPart{name: "amount", value: "101"}, note, doc), http.StatusUnprocessableEntity, ""},
		{"a JSON body", post(t, url, alice, key, `{"amount":100}`), http.StatusUnsupportedMediaType, ""},
	}
	for _, tt := range tests {
		status, h, body := do(t, tt.req)
		if status != tt.status || h.Get("Idempotent-Replayed") != tt.replayed {
			t.Fatalf("%s: status %d replayed %q, want %d %q (%s)", tt.name, status, h.Get("Idempotent-Replayed"),
				tt.status, tt.replayed, body)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times, want 1", runs.Load())
	}
}

// rawUpload is a multipart/form-data request whose single part "amount"
// carries headers as given (Content-Disposition added) and value as raw
// bytes.
func rawUpload(t *testing.T, url, auth, key string, header textproto.MIMEHeader, value string) *http.Request {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	h := textproto.MIMEHeader{"Content-Disposition": {`form-data; name="amount"`}}
	for name, vs := range header {
		h[name] = vs
	}
	w, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(value))
	mw.Close()
	r, err := http.NewRequest(http.MethodPost, url, &b)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Authorization", auth)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	r.Header.Set("Idempotency-Key", key)
	return r
}

func TestAPartHeaderThatChangesWhatTheUpstreamReadsIsPartOfTheRequest(t *testing.T) {
	s := openStore(t, 8)
	var read []string
	var mu sync.Mutex
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Go's reader decodes a quoted-printable part, as many servers do.
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, "bad upload", http.StatusBadRequest)
			return
		}
		mu.Lock()
		read = append(read, r.FormValue("amount"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"amount":"` + r.FormValue("amount") + `"}`))
	})
	srv := serveWrapped(t, s, "    body: multipart\n", upstream)
	alice := token(t, "alice")
	url := srv.URL + "/v1/things"
	qp := textproto.MIMEHeader{"Content-Transfer-Encoding": {"quoted-printable"}}

	tests := []struct {
		name     string
		header   textproto.MIMEHeader
		status   int
		replayed string
	}{
		{"quoted-printable: the upstream reads 10", qp, http.StatusCreated, ""},
		{"the same, Content-Transfer-Encoding in other case", textproto.MIMEHeader{"Content-Transfer-Encoding": {"Quoted-Printable"}},
			http.StatusCreated, "true"},
		{"the same raw bytes without the encoding: the upstream would read 1=30", nil, http.StatusUnprocessableEntity, ""},
		{"the same raw bytes under another header", textproto.MIMEHeader{"Content-Language": {"de"}}, http.StatusUnprocessableEntity, ""},
	}
	for _, tt := range tests {
		status, h, body := do(t, rawUpload(t, url, alice, "upload-cte-key-1", tt.header, "1=30"))
		if status != tt.status || h.Get(gateway.HeaderReplayed) != tt.replayed {
			t.Fatalf("%s: status %d replayed %q, want %d %q (%s)", tt.name, status, h.Get(gateway.HeaderReplayed),
				tt.status, tt.replayed, body)
		}
	}
	if len(read) != 1 || read[0] != "10" {
		t.Fatalf("upstream read %q, want one run that read 10", read)
	}
	// Without the encoding it is another request: under a new key it runs.
	if status, _, body := do(t, rawUpload(t, url, alice, "upload-cte-key-2", nil, "1=30")); status != http.StatusCreated ||
		body != `{"amount":"1=30"}` {
		t.Fatalf("new key, no encoding: %d %s", status, body)
	}
}
