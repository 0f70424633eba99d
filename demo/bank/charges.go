package bank

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/demo/internal/money"
	"github.com/idemcoord/idemcoord/demo/internal/problem"
)

// maxOperationID bounds the operation id the bank accepts; the payments
// service sends UUIDs, drills may send anything shorter.
const maxOperationID = 128

// ChargeRequest is the body of POST /charges.
type ChargeRequest struct {
	// OperationID is the idempotency operation this charge belongs to.
	OperationID string `json:"operation_id"`
	// Actor is the actor scope that asked for the payment.
	Actor string `json:"actor"`
	// Amount is a positive decimal string, e.g. "12.50".
	Amount string `json:"amount"`
	// Currency is an ISO 4217 code, e.g. "EUR".
	Currency string `json:"currency"`
}

// Charge is one recorded charge, as GET /charges lists it.
type Charge struct {
	// ChargeID identifies the charge.
	ChargeID uuid.UUID `json:"charge_id"`
	// OperationID is the operation the charge was made for.
	OperationID string `json:"operation_id"`
	// Actor is the actor scope of the payment.
	Actor string `json:"actor"`
	// Amount is the charged amount as a decimal string.
	Amount string `json:"amount"`
	// Currency is the ISO 4217 code.
	Currency string `json:"currency"`
	// CreatedAt is when the bank recorded the charge.
	CreatedAt time.Time `json:"created_at"`
}

// ChargesResponse is the body of GET /charges: whether operation_id was
// charged at least once, and every charge recorded for it, oldest first.
type ChargesResponse struct {
	// Charged is true when at least one charge exists.
	Charged bool `json:"charged"`
	// Charges lists every charge for the operation; more than one is a
	// double charge.
	Charges []Charge `json:"charges"`
}

// createCharge records a charge, subject to the fault knobs.
func (s *Server) createCharge(w http.ResponseWriter, r *http.Request) {
	var req ChargeRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&req); err != nil {
		problem.Invalid(w, "", "body must be a JSON object")
		return
	}
	if field, why := validate(req); field != "" {
		problem.Invalid(w, field, field+" "+why)
		return
	}
	ctx := r.Context()
	f, fail := s.take()
	switch {
	case f.Hang:
		<-ctx.Done()
		s.log.Info("bank: charge hung", "operation_id", req.OperationID)
		return
	case fail != 0:
		s.log.Info("bank: charge failed by fault", "operation_id", req.OperationID, "status", fail)
		problem.Write(w, problem.Details{Type: "injected-fault", Title: "injected fault", Status: fail,
			OperationID: req.OperationID, Detail: "nothing was recorded"})
		return
	}
	if !sleep(ctx, f.DelayBefore) {
		s.log.Info("bank: caller left before the charge", "operation_id", req.OperationID)
		return
	}
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO bank_charges (charge_id, operation_id, actor, amount, currency, created_at)
		VALUES ($1, $2, $3, $4::TEXT::NUMERIC, $5, $6)`,
		id, req.OperationID, req.Actor, req.Amount, req.Currency, s.now().UTC())
	if err != nil {
		// The caller sees a 500, which by the bank's contract means "not
		// recorded"; a commit lost with the connection breaks that promise,
		// which is why the payments service asks GET /charges before it ever
		// charges a failed payment again.
		s.log.Error("bank: record charge", "operation_id", req.OperationID, "err", err)
		problem.Write(w, problem.Details{Type: "ledger-unavailable", Title: "ledger unavailable",
			Status: http.StatusInternalServerError, OperationID: req.OperationID})
		return
	}
	s.log.Info("bank: charged", "operation_id", req.OperationID, "charge_id", id)
	if !sleep(ctx, f.DelayAfter) {
		s.log.Info("bank: caller left after the charge", "operation_id", req.OperationID, "charge_id", id)
		return
	}
	problem.JSON(w, http.StatusCreated, map[string]uuid.UUID{"charge_id": id})
}

// validate returns the first invalid field and why, or "".
func validate(req ChargeRequest) (field, why string) {
	switch {
	case req.OperationID == "" || len(req.OperationID) > maxOperationID:
		return "operation_id", "must be 1..128 bytes"
	case req.Actor == "":
		return "actor", "is required"
	}
	if _, err := money.ParseAmount(req.Amount); err != nil {
		return "amount", err.Error()
	}
	if err := money.CheckCurrency(req.Currency); err != nil {
		return "currency", err.Error()
	}
	return "", ""
}

// listCharges answers "was operation X charged?".
func (s *Server) listCharges(w http.ResponseWriter, r *http.Request) {
	op := r.URL.Query().Get("operation_id")
	if op == "" || len(op) > maxOperationID {
		problem.Invalid(w, "operation_id", "query parameter operation_id must be 1..128 bytes")
		return
	}
	rows, err := s.pool.Query(r.Context(), `SELECT charge_id, operation_id, actor, amount::TEXT, currency, created_at
		FROM bank_charges WHERE operation_id = $1 ORDER BY created_at, charge_id`, op)
	if err != nil {
		s.unavailable(w, op, err)
		return
	}
	defer rows.Close()
	resp := ChargesResponse{Charges: []Charge{}}
	for rows.Next() {
		var c Charge
		if err := rows.Scan(&c.ChargeID, &c.OperationID, &c.Actor, &c.Amount, &c.Currency, &c.CreatedAt); err != nil {
			s.unavailable(w, op, err)
			return
		}
		resp.Charges = append(resp.Charges, c)
	}
	if err := rows.Err(); err != nil {
		s.unavailable(w, op, err)
		return
	}
	resp.Charged = len(resp.Charges) > 0
	problem.JSON(w, http.StatusOK, resp)
}

func (s *Server) unavailable(w http.ResponseWriter, op string, err error) {
	s.log.Error("bank: read charges", "operation_id", op, "err", err)
	problem.Write(w, problem.Details{Type: "ledger-unavailable", Title: "ledger unavailable",
		Status: http.StatusServiceUnavailable, OperationID: op, RetryAfter: 1})
}
