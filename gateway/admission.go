package gateway

import (
	"time"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/gateway/admission"
)

// HeaderFirstSent is the request header that carries when the client first
// sent the intent (admission.HeaderFirstSent).
const HeaderFirstSent = admission.HeaderFirstSent

// FingerprintBudget is a weighted semaphore over the request-body bytes
// being fingerprinted at once (admission.FingerprintBudget).
type FingerprintBudget = admission.FingerprintBudget

// Defaults of a FingerprintBudget (admission's).
const (
	// DefaultFingerprintBudget is the bytes fingerprinted at once.
	DefaultFingerprintBudget = admission.DefaultFingerprintBudget
	// DefaultFingerprintWait is how long a request waits for budget.
	DefaultFingerprintWait = admission.DefaultFingerprintWait
)

// ErrFingerprintBusy means the budget could not be had in time.
var ErrFingerprintBusy = admission.ErrFingerprintBusy

// NewFingerprintBudget returns a budget of capacity bytes whose waiters
// give up after wait, timed by c (admission.NewFingerprintBudget: zero
// values take the defaults).
func NewFingerprintBudget(capacity int64, wait time.Duration, c clock.Clock) *FingerprintBudget {
	return admission.NewFingerprintBudget(capacity, wait, c)
}
