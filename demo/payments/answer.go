package payments

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/demo/internal/problem"
)

// Receipt is the JSON body of a created payment: the 201 of POST
// /v1/payments, GET /v1/payments/{id}, and the body inside a resolve answer.
type Receipt struct {
	// PaymentID identifies the payment.
	PaymentID uuid.UUID `json:"payment_id"`
	// Amount has two fraction digits, e.g. "12.50".
	Amount string `json:"amount"`
	// Currency is an ISO 4217 code.
	Currency string `json:"currency"`
	// Reference is the caller's reference.
	Reference string `json:"reference"`
	// Status is the payment's status; "succeeded" in a 201.
	Status string `json:"status"`
}

// Resolution is the 200 body of GET /internal/operations/{operation_id}:
// the response the operation's execution gave, for the gateway to store as
// the operation's outcome.
type Resolution struct {
	// Status is the HTTP status of the original answer (201).
	Status int `json:"status"`
	// Headers are the original answer's headers worth replaying.
	Headers map[string][]string `json:"headers"`
	// Body is the original answer's JSON body.
	Body Receipt `json:"body"`
}

// receipt returns p's public form.
func receipt(p Payment) Receipt {
	return Receipt{PaymentID: p.ID, Amount: p.Amount, Currency: p.Currency, Reference: p.Reference, Status: p.Status}
}

// location is the URL of p.
func location(p Payment) string { return "/v1/payments/" + p.ID.String() }

// resolution is what the first execution of p answered: 201 with its
// receipt. Every replay is built from the row, so it is byte-for-byte the
// same answer.
func resolution(p Payment) Resolution {
	return Resolution{Status: http.StatusCreated, Body: receipt(p), Headers: map[string][]string{
		"Content-Type": {"application/json"},
		"Location":     {location(p)},
	}}
}

// writeCreated answers 201 for a succeeded payment.
func writeCreated(w http.ResponseWriter, p Payment) {
	w.Header().Set("Location", location(p))
	problem.JSON(w, http.StatusCreated, receipt(p))
}

// inProgress answers 409: another execution of the operation owns it and
// its outcome is not known yet.
func inProgress(w http.ResponseWriter, op uuid.UUID) {
	problem.Write(w, problem.Details{Type: "in-progress", Title: "payment in progress",
		Status: http.StatusConflict, OperationID: op.String(), RetryAfter: 1,
		Detail: "this operation's payment is pending and the bank has no charge for it yet"})
}

// bankFailed answers 502: the bank did not record the charge.
func bankFailed(w http.ResponseWriter, op uuid.UUID) {
	problem.Write(w, problem.Details{Type: "bank-failed", Title: "bank refused the charge",
		Status: http.StatusBadGateway, OperationID: op.String(),
		Detail: "the bank did not charge; retrying the same operation charges again"})
}

// storeUnavailable answers 503: the payments database could not be used.
func storeUnavailable(w http.ResponseWriter, op uuid.UUID) {
	d := problem.Details{Type: "store-unavailable", Title: "payments store unavailable",
		Status: http.StatusServiceUnavailable, RetryAfter: 1}
	if op != uuid.Nil {
		d.OperationID = op.String()
	}
	problem.Write(w, d)
}
