package sqlstore

import (
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgx plans the scan of every column anew for every result (its scan
// plans are not cached across queries), and a plan for a nil destination,
// a time.Time or a **time.Time is an allocation or three: a first run's
// claim answer (the time, the flag, 27 NULLs) cost about 30 allocations
// to scan two values. The hot answers (the claim's head: its flag, time
// and operation id; the fenced update's version and times) are read here
// from their binary form instead, the form pgx asks PostgreSQL for these
// types; any other form, or a value these do not decode (an infinite
// time), falls back to rows.Scan.

// rawBool decodes column i of the current row as a non-null binary bool.
func rawBool(fds []pgconn.FieldDescription, raw [][]byte, i int) (v, ok bool) {
	if fds[i].DataTypeOID != pgtype.BoolOID || fds[i].Format != pgtype.BinaryFormatCode || len(raw[i]) != 1 {
		return false, false
	}
	return raw[i][0] == 1, true
}

// rawInt8 decodes column i as a non-null binary int8.
func rawInt8(fds []pgconn.FieldDescription, raw [][]byte, i int) (int64, bool) {
	if fds[i].DataTypeOID != pgtype.Int8OID || fds[i].Format != pgtype.BinaryFormatCode || len(raw[i]) != 8 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(raw[i])), true
}

// rawUUID decodes column i as a non-null binary uuid.
func rawUUID(fds []pgconn.FieldDescription, raw [][]byte, i int) (u [16]byte, ok bool) {
	if fds[i].DataTypeOID != pgtype.UUIDOID || fds[i].Format != pgtype.BinaryFormatCode || len(raw[i]) != 16 {
		return u, false
	}
	return [16]byte(raw[i]), true
}

// rawTime decodes column i as a binary timestamptz, as pgx scans it into
// a time.Time (local time, microseconds); null reports ok with null set.
func rawTime(fds []pgconn.FieldDescription, raw [][]byte, i int) (t time.Time, null, ok bool) {
	if fds[i].DataTypeOID != pgtype.TimestamptzOID || fds[i].Format != pgtype.BinaryFormatCode {
		return t, false, false
	}
	if raw[i] == nil {
		return t, true, true
	}
	if len(raw[i]) != 8 {
		return t, false, false
	}
	const (
		y2k      = 946684800 * 1_000_000 // microseconds from the Unix epoch to 2000-01-01
		infinity = 1<<63 - 1
	)
	us := int64(binary.BigEndian.Uint64(raw[i]))
	if us == infinity || us == -infinity-1 {
		return t, false, false
	}
	return time.Unix(y2k/1_000_000+us/1_000_000, (y2k%1_000_000*1_000)+(us%1_000_000*1_000)), false, true
}

// rawRow is the current row of rows: its field descriptions and values.
func rawRow(rows pgx.Rows) ([]pgconn.FieldDescription, [][]byte) {
	return rows.FieldDescriptions(), rows.RawValues()
}

// scanUpdated reads a fenced update's answer from the current row,
// starting at column at: its version, its lease's expiry (NULL once
// finished) and the record's expiry, as fencedUpdate.run's scan would.
func scanUpdated(rows pgx.Rows, at int, version *int64, leaseExp **time.Time, expires *time.Time) error {
	fds, raw := rawRow(rows)
	v, okV := rawInt8(fds, raw, at)
	le, leNull, okLE := rawTime(fds, raw, at+1)
	ex, exNull, okEx := rawTime(fds, raw, at+2)
	if !okV || !okLE || !okEx || exNull {
		dest := make([]any, at+3)
		dest[at], dest[at+1], dest[at+2] = version, leaseExp, expires
		return rows.Scan(dest...)
	}
	*version, *leaseExp, *expires = v, nil, ex
	if !leNull {
		t := le // (a copy: only a lease left running costs an allocation)
		*leaseExp = &t
	}
	return nil
}
