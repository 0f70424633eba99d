package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// GatewayEndpoint is the gateway endpoint a dead claim is made for: its name in
// the configuration and its fingerprint options, as the gateway computes
// the fingerprint of the request it will take over.
type GatewayEndpoint struct {
	Name        string
	Fingerprint idempotency.FingerprintOptions
}

// deadWorker is the lease_owner of a dead claim, for people reading the
// record.
const deadWorker = "chaos-probe/dead-worker"

// Takeover provokes the takeover of a crashed worker's claim and resolves
// it: it claims in's key through store as the gateway of the shard's
// owner would (the shard's current epoch and owner, the endpoint's scope
// and fingerprint), for lease, and never sends or finishes it, as a
// worker that died right after its claim. Then it sends in through the
// gateways (Resolve): while the lease runs they answer 409, after it one
// of them takes the operation over (the record's attempts become 2) and
// finds out from the upstream what to do. It returns the last recorded
// attempt; ErrFingerprintDiffers when a gateway found the request
// different from the claim (422).
func Takeover(ctx context.Context, st store.Store, rec *history.Recorder, gws []Gateway, ep GatewayEndpoint, in Intent,
	lease time.Duration) (history.Operation, error) {
	fp, err := idempotency.ComputeFingerprint(idempotency.Request{Method: http.MethodPost, Path: in.Path,
		ContentType: "application/json", Body: in.Body}, ep.Fingerprint)
	if err != nil {
		return history.Operation{}, fmt.Errorf("probe: takeover: fingerprint: %w", err)
	}
	req := store.ClaimRequest{
		Scope:       store.Scope{Actor: in.Actor, Endpoint: ep.Name, Key: idempotency.Key(in.Key)},
		Fingerprint: fp, Worker: deadWorker, Lease: lease, TTL: 24 * time.Hour,
	}
	for try := 0; ; try++ {
		epoch, owner, err := st.Fence(ctx, in.Shard)
		if err != nil {
			return history.Operation{}, fmt.Errorf("probe: takeover: read fence: %w", err)
		}
		req.Token = fencing.Token{Shard: in.Shard, Epoch: epoch, Region: owner}
		c, err := st.Begin(ctx, req)
		if errors.Is(err, fencing.ErrStaleEpoch) && try < 3 {
			continue // the shard moved between the read and the claim
		}
		if err != nil {
			return history.Operation{}, fmt.Errorf("probe: takeover: dead claim: %w", err)
		}
		if c.Outcome != store.FirstRun {
			return history.Operation{}, fmt.Errorf("probe: takeover: dead claim found the key taken (%s)", c.Outcome)
		}
		break
	}
	last, err := Resolve(ctx, rec, gws, in, history.Operation{})
	if err == nil && last.Mismatch() {
		err = fmt.Errorf("%w: endpoint %q, fingerprint options %+v", ErrFingerprintDiffers, ep.Name, ep.Fingerprint)
	}
	return last, err
}

// ErrFingerprintDiffers is returned by Takeover when the gateway answered
// 422 to the dead claim's own request: the probe's GatewayEndpoint does
// not fingerprint requests as the gateway's configuration does, and the
// dead claim was never taken over.
var ErrFingerprintDiffers = errors.New("probe: takeover: the gateway's fingerprint differs from the dead claim's")
