package sqlstore

import (
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

// The single statements of a first run (claimSQL, and a fenced update
// such as the finish that runs alone) take their arguments the way the
// batch statements take their arrays (batchargs.go): each argument is a
// pointer to a value pgx encodes without boxing a copy, and the values
// and the argument list share one allocation. Passed as plain Go values,
// every string, byte slice and integer above 255 was boxed into an
// interface on its own: about fourteen allocations of a claim and as
// many of a finish that ran alone. The PostgreSQL types pgx infers from
// them are the plain values' (text, bytea, int8, int4, timestamptz), so
// the statements are described and planned as before, in every query
// exec mode (TestSingleStatementsRunInEveryQueryExecMode).

// claimArgs are claimSQL's arguments, $1 on.
type claimArgs struct {
	actor, endpoint, state, owner, region           pgtype.Text
	keyHash, fingerprint                            [32]byte
	keyHashArg, fingerprintArg, members             bytea
	shard, epoch, fpVersion, leaseMS, ttlMS, marker pgtype.Int8
	opID                                            pgtype.UUID
	firstSent                                       pgtype.Timestamptz
	list                                            [17]any
}

// newClaimArgs are claimSQL's arguments for req; at is the statement's
// time (nil: the database's).
func newClaimArgs(at *time.Time, req *store.ClaimRequest, owner string, opID uuid.UUID, state idempotency.State) *claimArgs {
	a := &claimArgs{
		actor: pgText(req.Scope.Actor), endpoint: pgText(req.Scope.Endpoint), state: pgText(string(state)),
		owner: pgText(owner), region: pgText(req.Token.Region),
		keyHash: req.Scope.Key.Hash(), fingerprint: req.Fingerprint.Sum, members: membersArg(req.Members),
		shard: pgInt8(int64(req.Token.Shard)), epoch: pgInt8(req.Token.Epoch),
		fpVersion: pgInt8(int64(req.Fingerprint.Version)), leaseMS: pgInt8(req.Lease.Milliseconds()),
		ttlMS: pgInt8(snapshotTTL(*req).Milliseconds()), marker: pgInt8(markerTTL(*req).Milliseconds()),
		opID: pgtype.UUID{Bytes: opID, Valid: true},
	}
	a.keyHashArg, a.fingerprintArg = a.keyHash[:], a.fingerprint[:]
	if fs := firstSentArg(req.FirstSent); fs != nil {
		a.firstSent = pgtype.Timestamptz{Time: *fs, Valid: true}
	}
	a.list = [...]any{at, &a.actor, &a.endpoint, &a.keyHashArg, &a.shard, &a.epoch, &a.opID, &a.fingerprintArg,
		&a.fpVersion, &a.state, &a.owner, &a.leaseMS, &a.ttlMS, &a.region, &a.firstSent, &a.marker, &a.members}
	return a
}

// updateArgs are a fenced update's arguments as it runs alone: the fixed
// ones and, for a finish, its own (finishVals). Allocated by args, when
// the update runs alone, not kept in the update: a finish that goes in a
// batch would carry their 700 bytes for nothing.
type updateArgs struct {
	shard, epoch, version, ttl                 pgtype.Int8
	status                                     pgtype.Int4
	actor, endpoint, leaseOwner, region, state pgtype.Text
	resourceID, errSummary, stage              pgtype.Text
	keyHash, body                              bytea
	list                                       [fixedArgs + finishArgCount]any
}

// args are the statement's arguments, $1 on: pointers into a new
// updateArgs, and for the headers into u.
func (u *fencedUpdate) args() []any {
	a := new(updateArgs)
	a.shard, a.epoch, a.version = pgInt8(int64(u.shard)), pgInt8(u.epoch), pgInt8(u.version)
	a.actor, a.endpoint, a.leaseOwner, a.region = pgText(u.actor), pgText(u.endpoint), pgText(u.leaseOwner), pgText(u.region)
	a.keyHash = u.keyHash[:]
	list := append(a.list[:0], u.at, &a.shard, &a.epoch, &a.actor, &a.endpoint, &a.keyHash, &a.version,
		&a.leaseOwner, &a.region)
	if !u.finish {
		return append(list, u.extra...)
	}
	f := &u.fin
	a.state, a.body, a.ttl = pgText(f.state), f.body, pgInt8(f.ttl)
	a.status = pgtype.Int4{Int32: f.status, Valid: f.hasStatus}
	a.resourceID, a.errSummary = optText(f.resourceID), optText(f.errSummary)
	// The headers stay a *string: their parameter is cast to JSONB, and
	// pgx's JSON encoding boxes whatever it is given.
	list = append(list, &a.state, &a.status, optPtr(&f.headers, f.headers != ""), &a.body, f.omitted,
		&a.resourceID, &a.errSummary, &a.ttl)
	if f.stage != "" {
		a.stage = pgText(f.stage)
		list = append(list, &a.stage)
	}
	return list
}
