package client

// HeaderKeyStatus is the response header in which the server says what
// became of the Idempotency-Key the request carried (the gateway sets it
// on every answer to a keyed request).
const HeaderKeyStatus = "Idempotency-Status"

// Values of HeaderKeyStatus, as Response.KeyStatus returns them.
const (
	// KeyStatusCreated: this attempt ran the intent under the key.
	KeyStatusCreated = "created"
	// KeyStatusReplayed: the answer is the one recorded for the key; this
	// attempt ran nothing (Response.Replayed is true too).
	KeyStatusReplayed = "replayed"
	// KeyStatusInProgress: the key's operation is still running (409, or
	// 202 for async work); Do retries it with the same key.
	KeyStatusInProgress = "in-progress"
	// KeyStatusConflict: the key was used for another request (422).
	KeyStatusConflict = "conflict"
	// KeyStatusIgnored: the route does not honour keys. The request was
	// not protected: a retry of it may run it again.
	KeyStatusIgnored = "ignored"
	// KeyStatusRejected: refused before the key was used (400, 401, 413,
	// 415, 429, or a 503 that executed nothing).
	KeyStatusRejected = "rejected"
)

// KeyStatus returns the response's Idempotency-Status, or "" when the
// server sent none (an endpoint behind no idemcoord gateway, or an older
// one): then nothing is known about whether the key was honoured.
func (r *Response) KeyStatus() string { return r.Header.Get(HeaderKeyStatus) }
