package sqlstore

import "github.com/jackc/pgx/v5/pgtype"

// The group commit's batch statements take one array per column. pgx
// encodes a plain Go slice ([]string, []int64, [][]byte, []pgtype.UUID)
// through a generic wrapper that boxes every element into an interface on
// its way to the element's encoder (an allocation per element, and for
// slices of structs a reflect.Value per element too): the arguments of a
// batch of eight claims cost 163 allocations, of eight finishes 175, the
// largest share of a batch's Go CPU after the round trip itself (23 each
// now). A pgArray hands pgx a pointer
// to each element instead, which boxes for free, and each element type is
// one whose pointer pgx encodes directly in binary (pgtype's *Valuer
// interfaces): the arrays cost one allocation each, whatever the batch's
// size (TestBatchArgumentsDoNotAllocatePerMember).

// pgArray is a one-dimensional PostgreSQL array of E for pgx
// (pgtype.ArrayGetter). E is pgtype.Text, pgtype.Int4, pgtype.Int8,
// pgtype.UUID, pgtype.Timestamptz, pgtype.Bool or bytea: types whose
// pointer pgx encodes without boxing a copy.
type pgArray[E any] []E

// Dimensions implements pgtype.ArrayGetter.
func (a pgArray[E]) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index implements pgtype.ArrayGetter: a pointer into a, no copy.
func (a pgArray[E]) Index(i int) any { return &a[i] }

// IndexType implements pgtype.ArrayGetter.
func (a pgArray[E]) IndexType() any { return new(E) }

// bytea is a BYTEA element of a pgArray; nil is NULL, as for a []byte.
type bytea []byte

// BytesValue implements pgtype.BytesValuer.
func (b *bytea) BytesValue() ([]byte, error) { return *b, nil }

// pgText, pgInt4 and pgInt8 are non-null elements.
func pgText(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }
func pgInt4(n int32) pgtype.Int4  { return pgtype.Int4{Int32: n, Valid: true} }
func pgInt8(n int64) pgtype.Int8  { return pgtype.Int8{Int64: n, Valid: true} }

// registerBatchArrays names the PostgreSQL array type of each pgArray on
// a connection's type map. With the statement's parameter types at hand
// (pgx's default, cached prepared statements) pgx does not need it; the
// modes that send no Describe first (default_query_exec_mode=exec, and
// simple_protocol, which a transaction pooler needs) find a parameter's
// type from its Go type, and a pgArray's is not one pgx knows
// (TestBatchesRunInEveryQueryExecMode).
func registerBatchArrays(m *pgtype.Map) {
	m.RegisterDefaultPgType(pgArray[pgtype.Text]{}, "_text")
	m.RegisterDefaultPgType(pgArray[bytea]{}, "_bytea")
	m.RegisterDefaultPgType(pgArray[pgtype.Int4]{}, "_int4")
	m.RegisterDefaultPgType(pgArray[pgtype.Int8]{}, "_int8")
	m.RegisterDefaultPgType(pgArray[pgtype.UUID]{}, "_uuid")
	m.RegisterDefaultPgType(pgArray[pgtype.Timestamptz]{}, "_timestamptz")
	m.RegisterDefaultPgType(pgArray[pgtype.Bool]{}, "_bool")
}
