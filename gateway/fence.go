package gateway

import (
	"context"
	"sync"

	"github.com/idemcoord/idemcoord/fencing"
)

// fenceCache keeps each shard's epoch as last read from the store. It is a
// hint: the store checks the epoch in every write, and a StaleEpochError
// invalidates the entry so the next request reads the fence again.
type fenceCache struct {
	store  Store
	shards int
	mu     sync.Mutex
	epochs map[int]int64
}

func newFenceCache(s Store, shards int) *fenceCache {
	return &fenceCache{store: s, shards: shards, epochs: map[int]int64{}}
}

// token returns the fencing token for an actor.
func (f *fenceCache) token(ctx context.Context, actor string) (fencing.Token, error) {
	shard := fencing.ShardOf(actor, f.shards)
	f.mu.Lock()
	epoch, ok := f.epochs[shard]
	f.mu.Unlock()
	if ok {
		return fencing.Token{Shard: shard, Epoch: epoch}, nil
	}
	epoch, err := f.store.FenceEpoch(ctx, shard)
	if err != nil {
		return fencing.Token{}, err
	}
	f.mu.Lock()
	f.epochs[shard] = epoch
	f.mu.Unlock()
	return fencing.Token{Shard: shard, Epoch: epoch}, nil
}

// invalidate forgets a shard's epoch after the store refused it.
func (f *fenceCache) invalidate(shard int) {
	f.mu.Lock()
	delete(f.epochs, shard)
	f.mu.Unlock()
}
