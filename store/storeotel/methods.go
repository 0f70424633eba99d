package storeotel

import (
	"context"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/internal/idemconv"
	"github.com/idemcoord/idemcoord/store"
)

// op is one store call, as its db.operation.name.
type op int

const (
	opClaim op = iota
	opHeartbeat
	opRecordStage
	opFinish
	opRelease
	opResolve
	opLookup
	opRead
	opSaveRequest
	opDropRequest
	opStranded
	opFenced
	opTakeOver
	opCancel
	opFence
	opMoveFence
	opBootstrapFences
	opShardCount
	opFences
	opPing
	numOps
)

// opNames are the db.operation.name of each op: the store contract's
// call, snake_case (Begin is the claim).
var opNames = [numOps]string{
	opClaim: "claim", opHeartbeat: "heartbeat", opRecordStage: "record_stage", opFinish: "finish",
	opRelease: "release", opResolve: "resolve", opLookup: "lookup", opRead: "read",
	opSaveRequest: "save_request", opDropRequest: "drop_request", opStranded: "stranded", opFenced: "fenced",
	opTakeOver: "take_over", opCancel: "cancel", opFence: "fence", opMoveFence: "move_fence",
	opBootstrapFences: "bootstrap_fences", opShardCount: "shard_count", opFences: "fences", opPing: "ping",
}

// childOnly are the ops traced only inside a caller's span: the periodic
// scans, the readiness probe and the fence reads, which would otherwise
// each start a trace of one span on every tick.
var childOnly = [numOps]bool{opStranded: true, opFenced: true, opPing: true, opFence: true, opFences: true,
	opShardCount: true}

// OperationNames lists every db.operation.name the decorator records.
func OperationNames() []string { return append([]string(nil), opNames[:]...) }

// set puts attrs on c's span when it records; attrs is only evaluated by
// the caller when c.recording().
func (c call) set(attrs ...attribute.KeyValue) { c.span.SetAttributes(attrs...) }

func opID(id uuid.UUID) attribute.KeyValue { return idemconv.OperationID.String(id.String()) }

// claimed puts a claim's decision and operation id on c's span.
func (c call) claimed(claim store.Claim, err error) {
	if err == nil && c.recording() {
		c.set(idemconv.Decision.String(claim.Outcome.String()), opID(claim.Record.OperationID))
	}
}

// Begin is the store's Begin in a claim span: the endpoint, shard and key
// hash, then the decision and operation id.
func (s *Store) Begin(ctx context.Context, req store.ClaimRequest) (store.Claim, error) {
	ctx, c := s.begin(ctx, opClaim)
	if c.recording() {
		c.set(idemconv.Endpoint.String(req.Scope.Endpoint), idemconv.Shard.Int(req.Token.Shard),
			idemconv.KeyHashOf(req.Scope.Key))
	}
	claim, err := s.st.Begin(ctx, req)
	c.claimed(claim, err)
	s.end(ctx, c, err)
	return claim, err
}

// leased puts a lease's operation id and shard on c's span.
func (c call) leased(l *store.Lease) {
	if c.recording() {
		c.set(opID(l.OperationID), idemconv.Shard.Int(l.Token.Shard))
	}
}

// Heartbeat is the store's Heartbeat, traced.
func (s *Store) Heartbeat(ctx context.Context, l *store.Lease) error {
	ctx, c := s.begin(ctx, opHeartbeat)
	c.leased(l)
	err := s.st.Heartbeat(ctx, l)
	s.end(ctx, c, err)
	return err
}

// RecordStage is the store's RecordStage, traced.
func (s *Store) RecordStage(ctx context.Context, l *store.Lease, stage string) error {
	ctx, c := s.begin(ctx, opRecordStage)
	c.leased(l)
	err := s.st.RecordStage(ctx, l, stage)
	s.end(ctx, c, err)
	return err
}

// Finish is the store's Finish, traced with the state it records.
func (s *Store) Finish(ctx context.Context, l *store.Lease, res store.Result) error {
	ctx, c := s.begin(ctx, opFinish)
	c.leased(l)
	if c.recording() {
		c.set(idemconv.State.String(string(res.State)))
	}
	err := s.st.Finish(ctx, l, res)
	s.end(ctx, c, err)
	return err
}

// Release is the store's Release, traced.
func (s *Store) Release(ctx context.Context, l *store.Lease, summary string) error {
	ctx, c := s.begin(ctx, opRelease)
	c.leased(l)
	err := s.st.Release(ctx, l, summary)
	s.end(ctx, c, err)
	return err
}

// Resolve is the store's Resolve, traced with the state it records.
func (s *Store) Resolve(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	ctx, c := s.begin(ctx, opResolve)
	if c.recording() {
		c.set(opID(rec.OperationID), idemconv.State.String(string(res.State)))
	}
	err := s.st.Resolve(ctx, rec, tok, res)
	s.end(ctx, c, err)
	return err
}

// Lookup is the store's Lookup, traced.
func (s *Store) Lookup(ctx context.Context, actor string, id uuid.UUID) (store.Record, error) {
	ctx, c := s.begin(ctx, opLookup)
	if c.recording() {
		c.set(opID(id))
	}
	rec, err := s.st.Lookup(ctx, actor, id)
	s.end(ctx, c, err)
	return rec, err
}

// Read is the store's Read, traced with the endpoint and key hash.
func (s *Store) Read(ctx context.Context, sc store.Scope) (store.Record, error) {
	ctx, c := s.begin(ctx, opRead)
	if c.recording() {
		c.set(idemconv.Endpoint.String(sc.Endpoint), idemconv.KeyHashOf(sc.Key))
	}
	rec, err := s.st.Read(ctx, sc)
	s.end(ctx, c, err)
	return rec, err
}

// SaveRequest is the store's SaveRequest, traced.
func (s *Store) SaveRequest(ctx context.Context, l *store.Lease, request []byte) error {
	ctx, c := s.begin(ctx, opSaveRequest)
	c.leased(l)
	err := s.st.SaveRequest(ctx, l, request)
	s.end(ctx, c, err)
	return err
}

// DropRequest is the store's DropRequest, traced.
func (s *Store) DropRequest(ctx context.Context, id uuid.UUID) error {
	ctx, c := s.begin(ctx, opDropRequest)
	if c.recording() {
		c.set(opID(id))
	}
	err := s.st.DropRequest(ctx, id)
	s.end(ctx, c, err)
	return err
}

// Stranded is the store's Stranded, traced.
func (s *Store) Stranded(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	ctx, c := s.begin(ctx, opStranded)
	q, err := s.st.Stranded(ctx, scan)
	s.end(ctx, c, err)
	return q, err
}

// Fenced is the store's Fenced, traced.
func (s *Store) Fenced(ctx context.Context, scan store.StrandedScan) ([]store.Queued, error) {
	ctx, c := s.begin(ctx, opFenced)
	q, err := s.st.Fenced(ctx, scan)
	s.end(ctx, c, err)
	return q, err
}

// TakeOver is the store's TakeOver, traced as a claim is.
func (s *Store) TakeOver(ctx context.Context, rec store.Record, req store.ClaimRequest) (store.Claim, error) {
	ctx, c := s.begin(ctx, opTakeOver)
	if c.recording() {
		c.set(idemconv.Endpoint.String(req.Scope.Endpoint), idemconv.Shard.Int(req.Token.Shard), opID(rec.OperationID))
	}
	claim, err := s.st.TakeOver(ctx, rec, req)
	c.claimed(claim, err)
	s.end(ctx, c, err)
	return claim, err
}

// Cancel is the store's Cancel, traced.
func (s *Store) Cancel(ctx context.Context, rec store.Record, tok fencing.Token, res store.Result) error {
	ctx, c := s.begin(ctx, opCancel)
	if c.recording() {
		c.set(opID(rec.OperationID), idemconv.Shard.Int(tok.Shard))
	}
	err := s.st.Cancel(ctx, rec, tok, res)
	s.end(ctx, c, err)
	return err
}

// Fence is the store's Fence, traced.
func (s *Store) Fence(ctx context.Context, shard int) (int64, string, error) {
	ctx, c := s.begin(ctx, opFence)
	if c.recording() {
		c.set(idemconv.Shard.Int(shard))
	}
	epoch, owner, err := s.st.Fence(ctx, shard)
	s.end(ctx, c, err)
	return epoch, owner, err
}

// MoveFence is the store's MoveFence, traced.
func (s *Store) MoveFence(ctx context.Context, m fencing.Move) error {
	ctx, c := s.begin(ctx, opMoveFence)
	if c.recording() {
		c.set(idemconv.Shard.Int(m.Shard), idemconv.Region.String(m.To))
	}
	err := s.st.MoveFence(ctx, m)
	s.end(ctx, c, err)
	return err
}

// BootstrapFences is the store's BootstrapFences, traced.
func (s *Store) BootstrapFences(ctx context.Context, shards int, home func(shard int) string) error {
	ctx, c := s.begin(ctx, opBootstrapFences)
	err := s.st.BootstrapFences(ctx, shards, home)
	s.end(ctx, c, err)
	return err
}

// ShardCount is the store's ShardCount, traced.
func (s *Store) ShardCount(ctx context.Context) (int, error) {
	ctx, c := s.begin(ctx, opShardCount)
	n, err := s.st.ShardCount(ctx)
	s.end(ctx, c, err)
	return n, err
}

// Fences is the store's Fences, traced.
func (s *Store) Fences(ctx context.Context) ([]store.FenceRow, error) {
	ctx, c := s.begin(ctx, opFences)
	rows, err := s.st.Fences(ctx)
	s.end(ctx, c, err)
	return rows, err
}

// Ping is the store's Ping, traced.
func (s *Store) Ping(ctx context.Context) error {
	ctx, c := s.begin(ctx, opPing)
	err := s.st.Ping(ctx)
	s.end(ctx, c, err)
	return err
}
