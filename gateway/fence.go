package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/store"
)

// errNotOwner means another region owns the actor's shard.
var errNotOwner = errors.New("gateway: shard owned by another region")

// fenceCache keeps each shard's epoch as last read from the store. It is a
// hint: the store checks epoch and owner region in every write, and a
// StaleEpochError invalidates the entry so the next request reads the
// fence again. It never adopts an epoch that belongs to another region:
// doing so would let a region that lost the shard keep writing.
type fenceCache struct {
	store  store.Store
	shards int
	region string
	mu     sync.Mutex
	epochs map[int]int64
}

func newFenceCache(s store.Store, shards int, region string) *fenceCache {
	return &fenceCache{store: s, shards: shards, region: region, epochs: map[int]int64{}}
}

// cached returns the fencing token for an actor if the cache holds its
// shard's epoch (no I/O).
func (f *fenceCache) cached(actor string) (fencing.Token, bool) {
	shard := shard.Of(actor, f.shards)
	f.mu.Lock()
	epoch, ok := f.epochs[shard]
	f.mu.Unlock()
	return fencing.Token{Shard: shard, Epoch: epoch, Region: f.region}, ok
}

// token returns the fencing token for an actor, or errNotOwner.
func (f *fenceCache) token(ctx context.Context, actor string) (fencing.Token, error) {
	if tok, ok := f.cached(actor); ok {
		return tok, nil
	}
	shard := shard.Of(actor, f.shards)
	epoch, owner, err := f.store.Fence(ctx, shard)
	if err != nil {
		return fencing.Token{}, err
	}
	if owner != f.region { // an unowned ("") shard admits nobody either
		return fencing.Token{}, fmt.Errorf("%w: shard %d is owned by %q at epoch %d", errNotOwner, shard, owner, epoch)
	}
	f.mu.Lock()
	f.epochs[shard] = epoch
	f.mu.Unlock()
	return fencing.Token{Shard: shard, Epoch: epoch, Region: f.region}, nil
}

// invalidate forgets a shard's epoch after the store refused it.
func (f *fenceCache) invalidate(shard int) {
	f.mu.Lock()
	delete(f.epochs, shard)
	f.mu.Unlock()
}
