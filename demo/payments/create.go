package payments

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemcoord/idemcoord/demo/internal/money"
	"github.com/idemcoord/idemcoord/demo/internal/problem"
)

// Headers the gateway sets on every upstream request.
const (
	// HeaderOperationID carries the gateway's operation id (a UUID).
	HeaderOperationID = "X-Idempotency-Operation-Id"
	// HeaderActor carries the caller's actor scope ("tenant/subject").
	HeaderActor = "X-Idempotency-Actor"
)

const (
	maxBody      = 64 << 10
	maxReference = 128
)

// createRequest is the body of POST /v1/payments.
type createRequest struct {
	Amount    string `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
}

// create handles POST /v1/payments; see the package doc for the steps.
func (s *Server) create(w http.ResponseWriter, r *http.Request) { s.createHeld(w, r, 0, false) }

// createHeld handles POST /v1/held-payments: a payment reserved for
// Options.Hold before it is captured, reporting its stages (hold.go).
func (s *Server) createHeld(w http.ResponseWriter, r *http.Request, hold time.Duration, report bool) {
	actor, ok := actorOf(w, r)
	if !ok {
		return
	}
	op, err := uuid.Parse(r.Header.Get(HeaderOperationID))
	if err != nil {
		problem.Invalid(w, HeaderOperationID, HeaderOperationID+" must be a UUID set by the gateway")
		return
	}
	req, amount, ok := decode(w, r)
	if !ok {
		return
	}
	// From here on the payment runs to its end even if the caller leaves.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*s.timeout+dbBudget+hold)
	defer cancel()
	if !s.gate(ctx, w, op, actor, hold, report) {
		return
	}
	now := s.now().UTC().Truncate(time.Microsecond) // what the database keeps
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	p := Payment{ID: id, OperationID: op, Actor: actor, Amount: amount, Currency: req.Currency,
		Reference: req.Reference, Status: StatusPending, Attempts: 1, CreatedAt: now, UpdatedAt: now}
	existing, err := s.insert(ctx, p)
	switch {
	case err != nil:
		s.log.Error("payments: insert", "operation_id", op, "err", err)
		if !refusedByServer(err) {
			// The insert may have committed unseen, and the bank was never
			// called: a row left pending would answer 409 for good.
			s.releaseLater(p, err)
		}
		storeUnavailable(w, op)
	case existing == nil:
		s.log.Info("payments: created", "operation_id", op, "payment_id", p.ID)
		s.execute(ctx, w, p)
	case existing.Actor != p.Actor || existing.Currency != p.Currency || existing.Reference != p.Reference ||
		existing.Amount != p.Amount:
		s.log.Warn("payments: operation id reused for another request", "operation_id", op)
		problem.Write(w, problem.Details{Type: "operation-mismatch", Title: "operation id reused",
			Status: http.StatusUnprocessableEntity, OperationID: op.String(),
			Detail: "this operation id already belongs to a different payment request"})
	default:
		s.log.Info("payments: duplicate execution", "operation_id", op, "status", existing.Status)
		s.resume(ctx, w, *existing, true)
	}
}

// insert writes p as 'pending' in its own transaction. It returns nil if p
// was inserted, or the existing row if another execution of the operation
// inserted first. A lost connection may hide a commit, so on any other error
// the row is read back: finding p's own payment id means the insert
// happened.
func (s *Server) insert(ctx context.Context, p Payment) (*Payment, error) {
	_, err := s.pool.Exec(ctx, `INSERT INTO payments (payment_id, operation_id, actor, amount, currency,
		reference, status, attempts, created_at, updated_at)
		VALUES ($1, $2, $3, $4::TEXT::NUMERIC, $5, $6, $7, $8, $9, $9)`,
		p.ID, p.OperationID, p.Actor, p.Amount, p.Currency, p.Reference, p.Status, p.Attempts, p.CreatedAt)
	if err == nil {
		return nil, nil
	}
	if refusedByServer(err) {
		return nil, err // the server refused it: nothing was written
	}
	got, rerr := find(ctx, s.pool, p.OperationID)
	switch {
	case rerr == nil && got.ID == p.ID:
		return nil, nil
	case rerr == nil:
		return &got, nil
	case errors.Is(rerr, ErrNotFound):
		return nil, err
	default:
		return nil, errors.Join(err, rerr)
	}
}

// refusedByServer reports an insert error the server answered with (other
// than the unique violation insert handles): nothing was written.
func refusedByServer(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code != "23505"
}

// actorOf returns the actor scope the gateway set, or answers 400.
func actorOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	actor := r.Header.Get(HeaderActor)
	if actor == "" {
		problem.Invalid(w, HeaderActor, HeaderActor+" is required (set by the gateway)")
		return "", false
	}
	return actor, true
}

// decode parses and validates the body, answering 400 (or 413) naming the
// field on failure. The amount is returned with exactly two fraction
// digits, as the database stores it, so replays compare and print equal.
func decode(w http.ResponseWriter, r *http.Request) (createRequest, string, bool) {
	var req createRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	err := dec.Decode(&req)
	if err == nil && dec.Decode(&struct{}{}) != io.EOF {
		err = errors.New("trailing data")
	}
	var typeErr *json.UnmarshalTypeError
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		problem.Write(w, problem.Details{Type: "body-too-large", Title: "body too large",
			Status: http.StatusRequestEntityTooLarge})
		return req, "", false
	case errors.As(err, &typeErr) && typeErr.Field != "":
		problem.Invalid(w, typeErr.Field, typeErr.Field+" must be a JSON string")
		return req, "", false
	case err != nil:
		problem.Invalid(w, "", "body must be one JSON object")
		return req, "", false
	}
	d, err := money.ParseAmount(req.Amount)
	if err != nil {
		problem.Invalid(w, "amount", "amount "+err.Error())
		return req, "", false
	}
	if err := money.CheckCurrency(req.Currency); err != nil {
		problem.Invalid(w, "currency", "currency "+err.Error())
		return req, "", false
	}
	if n := utf8.RuneCountInString(req.Reference); n < 1 || n > maxReference {
		problem.Invalid(w, "reference", "reference must be 1..128 characters")
		return req, "", false
	}
	var fixed apd.Decimal
	if _, err := apd.BaseContext.WithPrecision(40).Quantize(&fixed, d, -money.MaxFractionDigits); err != nil {
		problem.Invalid(w, "amount", "amount is out of range")
		return req, "", false
	}
	return req, fixed.Text('f'), true
}
