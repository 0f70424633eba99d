package traffic

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
)

// Body is the request body of one payment intent.
type Body struct {
	// Amount has two fraction digits; Currency is EUR; Reference is
	// unique per intent and joins the history to the ledger.
	Amount    string `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
}

// Bytes is the body as sent: fixed field order, amounts with two fraction
// digits, so the ledger row it creates rebuilds the same bytes.
func (b Body) Bytes() []byte {
	out, _ := json.Marshal(b) // a struct of strings always marshals
	return out
}

// LedgerBody rebuilds the body a payment row was created from; it is what
// validate.Options.LedgerBody wants.
func LedgerBody(amount, currency, reference string) []byte {
	return Body{Amount: amount, Currency: currency, Reference: reference}.Bytes()
}

// randomAmount returns an amount between 1.00 and 999.99.
func randomAmount(rng *rand.Rand) string {
	cents := 100 + rng.IntN(99900)
	return fmt.Sprintf("%d.%02d", cents/100, cents%100)
}
