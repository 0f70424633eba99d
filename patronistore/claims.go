package patronistore

import (
	"context"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/store"
)

// The request paths: each call is about one shard (its token's, its
// lease's, its record's or its actor's) and runs on that shard's cluster
// alone, with that cluster's transactions and fence.

// Begin claims req's key on its shard's cluster.
func (s *Store) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	return s.of(req.Token.Shard).Begin(ctx, req)
}

// Heartbeat extends l on its shard's cluster.
func (s *Store) Heartbeat(ctx context.Context, l *store.Lease) error {
	return s.of(l.Token.Shard).Heartbeat(ctx, l)
}

// RecordStage records a stage under l on its shard's cluster.
func (s *Store) RecordStage(ctx context.Context, l *store.Lease, stage string) error {
	return s.of(l.Token.Shard).RecordStage(ctx, l, stage)
}

// Finish records l's result on its shard's cluster.
func (s *Store) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	return s.of(l.Token.Shard).Finish(ctx, l, res)
}

// Release records a run that sent nothing as not sent, through l, on its
// shard's cluster (now, or once that cluster answers again).
func (s *Store) Release(ctx context.Context, l *store.Lease, summary string) error {
	return s.of(l.Token.Shard).Release(ctx, l, summary)
}

// Resolve settles rec on its shard's cluster.
func (s *Store) Resolve(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	return s.of(tok.Shard).Resolve(ctx, rec, tok, res)
}

// Lookup returns actor's operation opID from the actor's cluster: an
// actor's operations all live on its shard.
func (s *Store) Lookup(ctx context.Context, actor string, opID uuid.UUID) (store.Record, error) {
	return s.ofActor(actor).Lookup(ctx, actor, opID)
}

// Read returns sc's record from its actor's cluster.
func (s *Store) Read(ctx context.Context, sc store.Scope) (store.Record, error) {
	return s.ofActor(sc.Actor).Read(ctx, sc)
}

// SaveRequest stores l's async request on its shard's cluster.
func (s *Store) SaveRequest(ctx context.Context, l *store.Lease, request []byte) error {
	return s.of(l.Token.Shard).SaveRequest(ctx, l, request)
}

// DropRequest deletes opID's stored request. The operation id does not
// say its shard, so every cluster is asked (a delete of nothing is
// nothing); it fails only if a cluster could not be asked.
func (s *Store) DropRequest(ctx context.Context, opID uuid.UUID) error {
	return s.each(ctx, func(ctx context.Context, _ int, c clusterStore) error { return c.DropRequest(ctx, opID) })
}

// TakeOver takes over rec on its shard's cluster.
func (s *Store) TakeOver(ctx context.Context, rec store.Record, req store.ClaimRequest) (store.Claim, error) {
	return s.of(req.Token.Shard).TakeOver(ctx, rec, req)
}

// Cancel records rec's cancellation on its shard's cluster.
func (s *Store) Cancel(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	return s.of(tok.Shard).Cancel(ctx, rec, tok, res)
}
