package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/fencing"
	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

var _ store.Ledger = (*Store)(nil)

// maxLedgerPage bounds LedgerScan.Page: a page is what the scan holds.
const maxLedgerPage = 5000

// RecordIncidentEvents writes events in one statement; an event already
// kept for the same key, class and epoch is left as it is (the unique
// index incident_events_once bounds the table by intents, not by
// retries).
func (s *Store) RecordIncidentEvents(ctx context.Context, events []store.IncidentEvent) error {
	if len(events) == 0 {
		return nil
	}
	ctx, done := s.call(ctx) // a deadline for every statement: a frozen primary keeps its connections open
	defer done()
	n := len(events)
	var (
		ids     = make([]uuid.UUID, n)
		ats     = make([]*time.Time, n)
		classes = make([]string, n)
		regions = make([]string, n)
		shards  = make([]int32, n)
		epochs  = make([]int64, n)
		actors  = make([]string, n)
		eps     = make([]string, n)
		keys    = make([][]byte, n)
		ops     = make([]*uuid.UUID, n)
		before  = make([]string, n)
		details = make([]string, n)
	)
	for i, e := range events {
		ids[i] = uuid.New()
		if !e.At.IsZero() {
			at := e.At
			ats[i] = &at
		} else {
			ats[i] = s.now()
		}
		classes[i], regions[i], shards[i], epochs[i] = e.Class, e.Region, int32(e.Shard), e.Epoch
		actors[i], eps[i], keys[i], ops[i] = e.Actor, e.Endpoint, append([]byte(nil), e.KeyHash[:]...), e.OperationID
		before[i], details[i] = e.StateBefore, e.Detail
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO incident_events (id, at, class, region, shard, epoch, actor_scope, endpoint,
			key_hash, operation_id, state_before, detail)
		SELECT id, COALESCE(at, now()), class, region, shard, epoch, actor_scope, endpoint, key_hash, operation_id,
			state_before, detail
		FROM unnest($1::UUID[], $2::TIMESTAMPTZ[], $3::TEXT[], $4::TEXT[], $5::INT4[], $6::INT8[], $7::TEXT[],
			$8::TEXT[], $9::BYTEA[], $10::UUID[], $11::TEXT[], $12::TEXT[])
			AS e(id, at, class, region, shard, epoch, actor_scope, endpoint, key_hash, operation_id, state_before, detail)
		ON CONFLICT (actor_scope, endpoint, key_hash, class, epoch) DO NOTHING`,
		ids, ats, classes, regions, shards, epochs, actors, eps, keys, ops, before, details)
	if err != nil {
		return fmt.Errorf("sqlstore: record incident events: %w", err)
	}
	return nil
}

// recordEvent writes one event the store itself observed (a takeover or
// a resolve across epochs), after the write it describes committed. It
// is the ledger's note, not part of the write: a failure is logged, and
// the write stands.
func (s *Store) recordEvent(ctx context.Context, class string, rec store.Record, region string, epoch int64, detail string) {
	op := rec.OperationID
	err := s.RecordIncidentEvents(ctx, []store.IncidentEvent{{Class: class, Region: region, Shard: rec.Token.Shard,
		Epoch: epoch, Actor: rec.Scope.Actor, Endpoint: rec.Scope.Endpoint, KeyHash: rec.KeyHash, OperationID: &op,
		StateBefore: string(rec.State), Detail: detail}})
	if err != nil {
		s.log.WarnContext(ctx, "incident event not recorded", "class", class, "operation_id", op, "err", err)
	}
}

// noteCrossing records class for rec (as read before the write that
// just committed under tok) when that write crossed an epoch: the region
// that wrote it took the shard over after rec was last written. Writes
// within one epoch are the steady state and record nothing, so the
// ledger's events grow with the intents incidents touch, not with
// traffic.
func (s *Store) noteCrossing(ctx context.Context, class string, rec store.Record, tok fencing.Token, detail string) {
	if rec.Token.Epoch >= tok.Epoch {
		return
	}
	s.recordEvent(ctx, class, rec, tok.Region, tok.Epoch, detail)
}

// touched reports whether the record scan of a window starting at from
// lists r: created before it, and running or unknown then or changed
// since.
func touched(r store.Record, from time.Time) bool {
	return r.CreatedAt.Before(from) && (!r.UpdatedAt.Before(from) || r.State == idempotency.Pending ||
		r.State == idempotency.InProgress || r.State == idempotency.OutcomeUnknown)
}

// ledgerEventCols are an event's columns, aliased so that they never
// shadow a record column in a join, and the recorded state at the start.
const ledgerEventCols = `ev_class, ev_at, ev_region, ev_shard, ev_epoch, ev_op, ev_before, ev_detail, sb_before`

// ledgerRecordsSQL is a page of the records a window touched, in primary
// key order after a cursor, each with the window's most telling event of
// its key and the state the first cross-epoch write after From found.
// {after} is the keyset condition (empty on the first page). $1 From, $2
// To, $3 shards, $4 page, $5 where events begin. Without an index on the
// times, a page walks the primary key until it has its rows: the whole
// scan reads the table once, in pages.
const ledgerRecordsSQL = `SELECT ` + ledgerEventCols + `, ` + recordCols + `
	FROM idempotency_records r
	LEFT JOIN LATERAL (SELECT e.class AS ev_class, e.at AS ev_at, e.region AS ev_region, e.shard AS ev_shard,
			e.epoch AS ev_epoch, e.operation_id AS ev_op, e.state_before AS ev_before, e.detail AS ev_detail
		FROM incident_events e
		WHERE e.actor_scope = r.actor_scope AND e.endpoint = r.endpoint AND e.key_hash = r.key_hash
		  AND e.at >= $5 AND e.at <= $2
		ORDER BY CASE e.class WHEN 'resolved' THEN 0 WHEN 'transferred' THEN 1 WHEN 'refused' THEN 2 ELSE 3 END, e.at, e.id
		LIMIT 1) ev ON true
	LEFT JOIN LATERAL (SELECT e.state_before AS sb_before FROM incident_events e
		WHERE e.actor_scope = r.actor_scope AND e.endpoint = r.endpoint AND e.key_hash = r.key_hash
		  AND e.at >= $1 AND e.class IN ('transferred', 'resolved')
		ORDER BY e.at, e.id LIMIT 1) sb ON true
	WHERE r.created_at < $1
	  AND (r.updated_at >= $1 OR r.state IN ('PENDING', 'IN_PROGRESS', 'OUTCOME_UNKNOWN'))
	  AND ($3::INT4[] IS NULL OR r.shard = ANY($3))
	  {after}
	ORDER BY r.actor_scope, r.endpoint, r.key_hash LIMIT $4`

// ledgerEventsSQL is a page of the window's events, the first of each
// key only, in time order after a cursor ({after}). $1 where events
// begin, $2 To, $3 shards, $4 page.
const ledgerEventsSQL = `SELECT e.id, e.class, e.at, e.region, e.shard, e.epoch, e.actor_scope, e.endpoint, e.key_hash,
		e.operation_id, e.state_before, e.detail
	FROM incident_events e
	WHERE e.at >= $1 AND e.at <= $2 AND ($3::INT4[] IS NULL OR e.shard = ANY($3))
	  AND NOT EXISTS (SELECT 1 FROM incident_events p
		WHERE p.actor_scope = e.actor_scope AND p.endpoint = e.endpoint AND p.key_hash = e.key_hash
		  AND p.at >= $1 AND (p.at, p.id) < (e.at, e.id))
	  {after}
	ORDER BY e.at, e.id LIMIT $4`

// ScanLedger implements store.Ledger: the records first, in primary key
// order, then the events of intents the records did not list, in time
// order. Each page is one statement with its own deadline.
func (s *Store) ScanLedger(ctx context.Context, sc store.LedgerScan, fn func(store.LedgerRow) error) error {
	if sc.From.IsZero() || sc.To.IsZero() || sc.To.Before(sc.From) {
		return errors.New("sqlstore: scan ledger: a window From <= To is required")
	}
	page := sc.Page
	if page <= 0 {
		page = store.DefaultLedgerPage
	}
	page = min(page, maxLedgerPage)
	var shards []int32
	if sc.Shards != nil {
		shards = make([]int32, len(sc.Shards))
		for i, n := range sc.Shards {
			shards[i] = int32(n)
		}
	}
	if sc.EventsFrom.IsZero() || sc.EventsFrom.After(sc.From) {
		sc.EventsFrom = sc.From
	}
	if err := s.scanLedgerRecords(ctx, sc, shards, page, fn); err != nil {
		return err
	}
	return s.scanLedgerEvents(ctx, sc, shards, page, fn)
}

// scanLedgerRecords pages through the records a window touched.
func (s *Store) scanLedgerRecords(ctx context.Context, sc store.LedgerScan, shards []int32, page int,
	fn func(store.LedgerRow) error) error {
	firstSQL := strings.Replace(ledgerRecordsSQL, "{after}", "", 1)
	nextSQL := strings.Replace(ledgerRecordsSQL, "{after}", `AND (r.actor_scope, r.endpoint, r.key_hash) > ($6, $7, $8)`, 1)
	var last *store.LedgerRow
	buf := make([]store.LedgerRow, 0, page)
	for {
		buf = buf[:0]
		err := func() error {
			ctx, done := s.call(ctx)
			defer done()
			q, args := firstSQL, []any{sc.From, sc.To, shards, page, sc.EventsFrom}
			if last != nil {
				q = nextSQL
				args = append(args, last.Record.Scope.Actor, last.Record.Scope.Endpoint, last.Record.KeyHash[:])
			}
			rows, err := s.pool.Query(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var (
					row store.LedgerRow
					ev  ledgerEventScan
				)
				if err := scanRecord(rows, &row.Record, ev.dests()...); err != nil {
					return err
				}
				row.Found, row.Event = true, ev.event(row.Record)
				if ev.atStart != nil {
					row.StateAtStart = *ev.atStart
				}
				buf = append(buf, row)
			}
			return rows.Err()
		}()
		if err != nil {
			return fmt.Errorf("sqlstore: scan ledger records: %w", err)
		}
		for _, row := range buf {
			if err := fn(row); err != nil {
				return err
			}
		}
		if len(buf) < page {
			return nil
		}
		l := buf[len(buf)-1]
		last = &l
	}
}

// ledgerEventScan receives the nullable event columns of a record row.
type ledgerEventScan struct {
	class, region, before, detail *string
	atStart                       *string
	at                            *time.Time
	shard                         *int32
	epoch                         *int64
	op                            *uuid.UUID
}

func (e *ledgerEventScan) dests() []any {
	return []any{&e.class, &e.at, &e.region, &e.shard, &e.epoch, &e.op, &e.before, &e.detail, &e.atStart}
}

// event is the scanned event of rec's key, zero when there was none.
func (e *ledgerEventScan) event(rec store.Record) store.IncidentEvent {
	if e.class == nil {
		return store.IncidentEvent{}
	}
	return store.IncidentEvent{At: *e.at, Class: *e.class, Region: *e.region, Shard: int(*e.shard), Epoch: *e.epoch,
		Actor: rec.Scope.Actor, Endpoint: rec.Scope.Endpoint, KeyHash: rec.KeyHash, OperationID: e.op,
		StateBefore: *e.before, Detail: *e.detail}
}

// scanLedgerEvents pages through the window's events whose intent the
// record scan did not list, each with its record when it has one.
func (s *Store) scanLedgerEvents(ctx context.Context, sc store.LedgerScan, shards []int32, page int,
	fn func(store.LedgerRow) error) error {
	firstSQL := strings.Replace(ledgerEventsSQL, "{after}", "", 1)
	nextSQL := strings.Replace(ledgerEventsSQL, "{after}", `AND (e.at, e.id) > ($5, $6)`, 1)
	var (
		lastAt time.Time
		lastID uuid.UUID
		more   = false
	)
	evs := make([]store.IncidentEvent, 0, page)
	for {
		evs = evs[:0]
		err := func() error {
			ctx, done := s.call(ctx)
			defer done()
			q, args := firstSQL, []any{sc.EventsFrom, sc.To, shards, page}
			if more {
				q = nextSQL
				args = append(args, lastAt, lastID)
			}
			rows, err := s.pool.Query(ctx, q, args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var (
					e     store.IncidentEvent
					shard int32
					key   []byte
				)
				if err := rows.Scan(&lastID, &e.Class, &e.At, &e.Region, &shard, &e.Epoch, &e.Actor, &e.Endpoint, &key,
					&e.OperationID, &e.StateBefore, &e.Detail); err != nil {
					return err
				}
				e.Shard = int(shard)
				copy(e.KeyHash[:], key)
				lastAt = e.At
				evs = append(evs, e)
			}
			return rows.Err()
		}()
		if err != nil {
			return fmt.Errorf("sqlstore: scan ledger events: %w", err)
		}
		recs, err := s.ledgerRecordsOf(ctx, evs)
		if err != nil {
			return err
		}
		for _, e := range evs {
			rec, found := recs[ledgerKey{e.Actor, e.Endpoint, e.KeyHash}]
			if found && touched(rec, sc.From) {
				continue // listed by the record scan, with this event
			}
			if err := fn(store.LedgerRow{Found: found, Record: rec, Event: e}); err != nil {
				return err
			}
		}
		if len(evs) < page {
			return nil
		}
		more = true
	}
}

// ledgerKey is a record's primary key.
type ledgerKey struct {
	actor, endpoint string
	hash            [32]byte
}

// ledgerRecordsOf reads the records of a page of events, in one statement.
func (s *Store) ledgerRecordsOf(ctx context.Context, evs []store.IncidentEvent) (map[ledgerKey]store.Record, error) {
	out := make(map[ledgerKey]store.Record, len(evs))
	if len(evs) == 0 {
		return out, nil
	}
	ctx, done := s.call(ctx)
	defer done()
	actors, eps, keys := make([]string, len(evs)), make([]string, len(evs)), make([][]byte, len(evs))
	for i, e := range evs {
		actors[i], eps[i], keys[i] = e.Actor, e.Endpoint, append([]byte(nil), e.KeyHash[:]...)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+recordCols+` FROM idempotency_records
		WHERE (actor_scope, endpoint, key_hash) IN (SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::BYTEA[]))`,
		actors, eps, keys)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: scan ledger: records of events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r store.Record
		if err := scanRecord(rows, &r); err != nil {
			return nil, fmt.Errorf("sqlstore: scan ledger: records of events: %w", err)
		}
		out[ledgerKey{r.Scope.Actor, r.Scope.Endpoint, r.KeyHash}] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: scan ledger: records of events: %w", err)
	}
	return out, nil
}
