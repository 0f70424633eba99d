package gateway

import "github.com/idemcoord/idemcoord/gateway/exchange"

// HeaderKeyStatus is the response header that tells a client what became
// of the Idempotency-Key it sent (exchange.HeaderKeyStatus).
const HeaderKeyStatus = exchange.HeaderKeyStatus

// HeaderKeyExpires is the response header that says until when the key of
// a coordinated answer is honoured (exchange.HeaderKeyExpires).
const HeaderKeyExpires = exchange.HeaderKeyExpires

// Values of HeaderKeyStatus (see exchange's for what each means).
const (
	// KeyStatusCreated: this request ran the intent under the key.
	KeyStatusCreated = exchange.KeyStatusCreated
	// KeyStatusReplayed: the answer is the key's recorded outcome.
	KeyStatusReplayed = exchange.KeyStatusReplayed
	// KeyStatusInProgress: the key's operation is running or reconciled.
	KeyStatusInProgress = exchange.KeyStatusInProgress
	// KeyStatusConflict: the key belongs to another request (422).
	KeyStatusConflict = exchange.KeyStatusConflict
	// KeyStatusIgnored: the route does not honour keys.
	KeyStatusIgnored = exchange.KeyStatusIgnored
	// KeyStatusRejected: the request was refused before the key was used.
	KeyStatusRejected = exchange.KeyStatusRejected
)
