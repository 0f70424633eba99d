package payments

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/demo/bank"
)

// chargeOutcome classifies one POST /charges the way the HTTP contract
// classifies upstream answers: only "sent and no answer" is ambiguous.
type chargeOutcome int

const (
	// charged: the bank answered 201, the charge is recorded.
	charged chargeOutcome = iota
	// refused: the bank answered another status; by its contract nothing
	// was recorded.
	refused
	// notSent: the request never left (the connection could not be made).
	notSent
	// unknown: the request may have reached the bank and no answer came
	// (timeout, reset, EOF): the charge may or may not exist.
	unknown
)

// bankClient calls the bank's HTTP API.
type bankClient struct {
	base string
	http *http.Client
}

func newBankClient(base string, timeout time.Duration) *bankClient {
	t := http.DefaultTransport.(*http.Transport).Clone()
	return &bankClient{base: base, http: &http.Client{Timeout: timeout, Transport: t}}
}

// charge asks the bank to charge p. The error, if any, explains a refused,
// notSent or unknown outcome; chargeID is set only when the bank said which
// charge it recorded.
func (c *bankClient) charge(ctx context.Context, p Payment) (out chargeOutcome, chargeID uuid.NullUUID, err error) {
	body, err := json.Marshal(bank.ChargeRequest{OperationID: p.OperationID.String(), Actor: p.Actor,
		Amount: p.Amount, Currency: p.Currency})
	if err != nil {
		return notSent, chargeID, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/charges", bytes.NewReader(body))
	if err != nil {
		return notSent, chargeID, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if neverSent(err) {
			return notSent, chargeID, err
		}
		return unknown, chargeID, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusCreated {
		return refused, chargeID, fmt.Errorf("payments: bank answered %d", resp.StatusCode)
	}
	var created struct {
		ChargeID uuid.UUID `json:"charge_id"`
	}
	if json.Unmarshal(b, &created) == nil && created.ChargeID != uuid.Nil {
		chargeID = uuid.NullUUID{UUID: created.ChargeID, Valid: true}
	}
	return charged, chargeID, nil
}

// charged asks the bank whether operationID was charged, and returns the
// first charge's id if it was. Any error means "cannot tell".
func (c *bankClient) charged(ctx context.Context, op uuid.UUID) (bool, uuid.NullUUID, error) {
	var none uuid.NullUUID
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		c.base+"/charges?operation_id="+url.QueryEscape(op.String()), nil)
	if err != nil {
		return false, none, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, none, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, none, fmt.Errorf("payments: bank answered %d to a charge query", resp.StatusCode)
	}
	var got bank.ChargesResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&got); err != nil {
		return false, none, fmt.Errorf("payments: bank charge query: %w", err)
	}
	if !got.Charged {
		return false, none, nil
	}
	if len(got.Charges) > 0 {
		return true, uuid.NullUUID{UUID: got.Charges[0].ChargeID, Valid: true}, nil
	}
	return true, none, nil
}

// neverSent reports whether err proves the request did not reach the bank:
// the connection itself failed (refused, unreachable, DNS). Everything
// else — a timeout after connecting, a reset, an EOF — may hide a charge.
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
