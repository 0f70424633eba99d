package exchange

import (
	"net/http"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// HeaderKeyStatus is the response header that tells a client what became
// of the Idempotency-Key it sent. Every answer to a request that carried
// the header has it (and no other answer does), whatever its status; a
// client tells from it whether the key protected the request at all.
// Idempotent-Replayed is kept beside it for the clients that read that.
const HeaderKeyStatus = "Idempotency-Status"

// Values of HeaderKeyStatus.
const (
	// KeyStatusCreated: this request ran the intent under the key (a
	// first run, or a takeover of an attempt that failed retryably or was
	// abandoned), whatever the upstream answered.
	KeyStatusCreated = "created"
	// KeyStatusReplayed: the answer is the key's recorded outcome
	// (Idempotent-Replayed: true), or derived from it (a reference replay,
	// 410 resource-gone, 410 replay-expired once only the key's marker is
	// kept); nothing ran.
	KeyStatusReplayed = "replayed"
	// KeyStatusInProgress: the key's operation is running or its outcome
	// is being reconciled (409, or 202 on an async retry); nothing ran
	// twice. Retry with the same key.
	KeyStatusInProgress = "in-progress"
	// KeyStatusConflict: the key belongs to another request (422).
	KeyStatusConflict = "conflict"
	// KeyStatusIgnored: the route does not honour keys (not a coordinated
	// endpoint, or a shadow-mode one): the request was not protected, and
	// a retry may run it again.
	KeyStatusIgnored = "ignored"
	// KeyStatusRejected: the request was refused before the key was used
	// (400 invalid key, 401, 413, 415, 429, 503 with nothing executed):
	// nothing ran and the key's record, if any, is unchanged, except that
	// a 503 store-unavailable's claim the store could not confirm may
	// exist until the store releases it. Retry with the same key once the
	// problem is fixed.
	KeyStatusRejected = "rejected"
)

// KeyStatusWriter sets HeaderKeyStatus on the answer it writes, to the
// value the protocol last decided, over any copy that stored or upstream
// headers brought in. Unwrap keeps http.ResponseController working.
type KeyStatusWriter struct {
	http.ResponseWriter
	// status is the value written; empty keeps the header as it is (a
	// forwarded answer carries the owner's).
	status string
	wrote  bool
}

// WithKeyStatus wraps w when r carries an Idempotency-Key, so that its
// answer says what became of the key; initial is the value until the
// protocol decides another.
func WithKeyStatus(w http.ResponseWriter, r *http.Request, initial string) http.ResponseWriter {
	if len(r.Header.Values(HeaderKey)) == 0 {
		return w
	}
	return &KeyStatusWriter{ResponseWriter: w, status: initial}
}

// WriteHeader sets HeaderKeyStatus on the first final answer.
func (w *KeyStatusWriter) WriteHeader(code int) {
	if !w.wrote && code >= 200 {
		w.wrote = true
		if w.status != "" {
			w.Header().Set(HeaderKeyStatus, w.status)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes b, after the header if none was written.
func (w *KeyStatusWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush flushes the answer, after the header if none was written.
func (w *KeyStatusWriter) Flush() {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the wrapped writer (http.ResponseController).
func (w *KeyStatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// SetKeyStatus records what the protocol decided for the call's key. A
// shadow-mode call writes to its recorder, not to the client, and its
// client's answer stays "ignored".
func SetKeyStatus(w http.ResponseWriter, status string) {
	if kw, ok := w.(*KeyStatusWriter); ok {
		kw.status = status
	}
}

// RecordKeyStatus is the status of an answer read from rec: replayed once
// the operation is final, in progress before.
func RecordKeyStatus(rec store.Record) string {
	switch rec.State {
	case idempotency.Completed, idempotency.TerminalFailure, idempotency.Cancelled:
		return KeyStatusReplayed
	}
	return KeyStatusInProgress
}

// ClaimKeyStatus is the status of the answer to a claim's decision.
func ClaimKeyStatus(claim store.Claim) string {
	switch claim.Outcome {
	case store.FirstRun, store.TakenOver:
		return KeyStatusCreated
	case store.Replayed:
		return KeyStatusReplayed
	case store.Mismatch:
		return KeyStatusConflict
	}
	return KeyStatusInProgress
}
