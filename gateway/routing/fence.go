package routing

import (
	"context"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/shard"
)

// cached returns the fencing token for an actor if the cache holds its
// shard's epoch (no I/O).
func (f *fenceCache) cached(actor string) (fencing.Token, bool) {
	shard := shard.Of(actor, f.shards)
	f.mu.Lock()
	epoch, ok := f.epochs[shard]
	f.mu.Unlock()
	return fencing.Token{Shard: shard, Epoch: epoch, Region: f.region}, ok
}

// token returns the fencing token for an actor, read from the store's
// fence unless cached. owned is false, with the fence's owner, when the
// shard is not this region's (an unowned ("") shard admits nobody either).
func (f *fenceCache) token(ctx context.Context, actor string) (tok fencing.Token, owned bool, owner string, err error) {
	if tok, ok := f.cached(actor); ok {
		return tok, true, f.region, nil
	}
	shard := shard.Of(actor, f.shards)
	epoch, owner, err := f.store.Fence(ctx, shard)
	if err != nil {
		return fencing.Token{}, false, "", err
	}
	if owner != f.region {
		return fencing.Token{Shard: shard, Epoch: epoch}, false, owner, nil
	}
	f.mu.Lock()
	f.epochs[shard] = epoch
	f.mu.Unlock()
	return fencing.Token{Shard: shard, Epoch: epoch, Region: f.region}, true, owner, nil
}

// invalidate forgets a shard's epoch after the store refused it.
func (f *fenceCache) invalidate(shard int) {
	f.mu.Lock()
	delete(f.epochs, shard)
	f.mu.Unlock()
}

// FenceToken returns the fencing token this region writes an actor's
// records with, as the store's fence gives it (the fence cache first):
// what recovery and the move sweep take operations over with. owned is
// false when the fence gives the shard to another region (or nobody).
func (s *Stage) FenceToken(ctx context.Context, actor string) (tok fencing.Token, owned bool, err error) {
	tok, owned, _, err = s.fences.token(ctx, actor)
	return tok, owned, err
}

// Invalidate forgets a shard's fence epoch after the store refused it.
func (s *Stage) Invalidate(shard int) { s.fences.invalidate(shard) }

// CachedEpoch returns the epoch of actor's shard fence as last read, 0
// when none was read yet; it never reads the store (the incident ledger's
// notes of requests refused while the store is down).
func (s *Stage) CachedEpoch(actor string) int64 {
	tok, _ := s.fences.cached(actor)
	return tok.Epoch
}
