package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// CancelVerdict is the upstream's answer to "cancel operation X".
type CancelVerdict int

// Cancel verdicts.
const (
	// CancelUndetermined: no usable answer (unreachable, timed out, or an
	// answer that is neither of the two below). Nothing is recorded; the
	// client retries the DELETE.
	CancelUndetermined CancelVerdict = iota
	// CancelConfirmed: 200 with HeaderStage "cancelled". The upstream
	// promises the operation never takes effect.
	CancelConfirmed
	// CancelRefused: 409 with HeaderStage naming the stage the operation
	// reached, from which it cannot be undone.
	CancelRefused
)

// Canceller asks the upstream to cancel an operation (*Proxy). An
// Executor that is not one (a wrapped handler) has no cancel.
type Canceller interface {
	// Cancel asks once, at the endpoint's cancel_path. It must be
	// idempotent upstream: asking again about a cancelled operation
	// confirms again.
	Cancel(ctx context.Context, in Invocation) (CancelVerdict, idempotency.Stage, error)
}

var _ Canceller = (*Proxy)(nil)

// Cancel POSTs to the endpoint's cancel_path with the operation id and
// actor, within the endpoint's upstream timeout, detached from the
// caller's context (a cancel the upstream may be carrying out is seen to
// its answer).
func (p *Proxy) Cancel(ctx context.Context, in Invocation) (CancelVerdict, idempotency.Stage, error) {
	ctx, cancel := context.WithTimeout(exchange.Detach(ctx), in.Endpoint.UpstreamTimeout)
	defer cancel()
	u := *p.upstream
	u.Path = strings.TrimSuffix(u.Path, "/") +
		strings.ReplaceAll(in.Endpoint.CancelPath, config.OperationIDParam, in.OperationID.String())
	ctx, sent := traceSend(ctx, nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), http.NoBody)
	if err != nil {
		return CancelUndetermined, idempotency.Stage{}, err
	}
	setIdentity(req.Header, in)
	a := p.do(req, sent)
	if a.Err != nil {
		return CancelUndetermined, idempotency.Stage{}, exchange.Redact(a.Err)
	}
	st, ok := stageOf(a.Header)
	switch {
	case a.Status == http.StatusOK && ok && st.Cancelled():
		return CancelConfirmed, st, nil
	case a.Status == http.StatusConflict && ok && !st.Cancelled():
		return CancelRefused, st, nil
	}
	return CancelUndetermined, st, fmt.Errorf("gateway: cancel answered %d with stage %q", a.Status, a.Header.Get(HeaderStage))
}

// Cancelled is what every path that learns of a confirmed cancel
// records (the DELETE, the worker whose upstream call ends in the
// cancellation, a resolve): one answer, the same whichever path recorded
// it, replayed to every retry of the original request.
var Cancelled = store.Result{State: idempotency.Cancelled, ErrorSummary: "cancelled by the owning actor",
	Snapshot: store.Snapshot{Status: http.StatusConflict,
		Header: http.Header{"Content-Type": {"application/problem+json"}},
		Body: mustJSON(exchange.Problem{Type: exchange.ProblemBase + "operation-cancelled", Title: "operation cancelled",
			Detail: "the owning actor cancelled this operation before its irreversible stage; it never took effect",
			Status: http.StatusConflict, OperationState: string(idempotency.Cancelled), NewKeySafe: true})}}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
