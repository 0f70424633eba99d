package probe

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// Endpoint is the endpoint name probe claims are made under, so they never
// collide with real traffic.
const Endpoint = "chaos-probe"

// StaleEpoch claims a fresh key for actor through store with an epoch one
// below its shard's current one, as a region that lost the shard would,
// and records what the fence did: history.ProbeStaleEpochRejected when it
// refused (it must), history.ProbeStaleEpochAccepted when the claim went
// through (an I3 violation). n makes the probe's key unique in the run.
//
// Any other error (the store is unreachable) is returned and nothing is
// recorded: a probe that could not ask proves nothing either way.
func StaleEpoch(ctx context.Context, st store.Store, rec *history.Recorder, actor string, shards int, n int64) (history.Operation, error) {
	shard := shard.Of(actor, shards)
	call := rec.Now()
	epoch, owner, err := st.Fence(ctx, shard)
	if err != nil {
		return history.Operation{}, fmt.Errorf("probe: read fence: %w", err)
	}
	tok := fencing.Token{Shard: shard, Epoch: epoch - 1, Region: owner}
	key := fmt.Sprintf("stale-probe-%d", n)
	_, err = st.Begin(ctx, store.ClaimRequest{
		Scope:       store.Scope{Actor: actor, Endpoint: Endpoint, Key: idempotency.Key(key)},
		Fingerprint: idempotency.Fingerprint{Version: idempotency.FingerprintV1, Sum: sha256.Sum256([]byte(key))},
		Token:       tok, Worker: "chaos-probe", Lease: time.Second, TTL: time.Hour,
	})
	op := history.Operation{Kind: history.KindProbe, Call: call, Return: rec.Now(), Actor: actor, Key: key,
		Shard: shard, Detail: fmt.Sprintf("claim with epoch %d, fence at %d", tok.Epoch, epoch)}
	switch {
	case errors.Is(err, fencing.ErrStaleEpoch):
		op.Probe = history.ProbeStaleEpochRejected
	case err == nil:
		op.Probe = history.ProbeStaleEpochAccepted
	default:
		return history.Operation{}, fmt.Errorf("probe: stale claim: %w", err)
	}
	return rec.Add(op), nil
}
