package gateway_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"sync/atomic"
	"testing"
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
	s := store(t, 8)
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
