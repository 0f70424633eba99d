package validate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Record is the part of an idempotency_records row the checker reads.
type Record struct {
	// ActorScope, Endpoint and KeyHash (SHA-256 of the key) are the
	// record's primary key.
	ActorScope string
	Endpoint   string
	KeyHash    [32]byte
	// OperationID is the operation's id, as answers name it.
	OperationID string
	// State is the idempotency state (COMPLETED, IN_PROGRESS, ...).
	State string
	// Attempts counts claims of the operation; above 1 means a takeover.
	Attempts int
	// Shard and Epoch are the fencing token of the record's last write.
	Shard int
	Epoch int64
	// ResponseStatus is the stored status, 0 when none is stored;
	// ResponseHash the hex SHA-256 of the stored body.
	ResponseStatus int
	ResponseHash   string
	// ResourceID is the stored business resource id.
	ResourceID string
	// LeaseExpiresAt is zero when there is no lease.
	LeaseExpiresAt time.Time
	// CreatedAt and UpdatedAt are the database's times (a transaction's
	// start, not its commit).
	CreatedAt, UpdatedAt time.Time
}

// Fence is one shard_fences row.
type Fence struct {
	// Shard is the shard; Epoch its ownership epoch; OwnerRegion the region
	// that may write it ("" when unassigned).
	Shard       int
	Epoch       int64
	OwnerRegion string
}

// Audit is one repair_audit row.
type Audit struct {
	// At is the database's time of the repair; Action its kind
	// ("move_fence", "purge", ...); Detail its free-text detail.
	At     time.Time
	Action string
	Detail string
}

// Payment is one row of the demo's payments table: the business resource.
type Payment struct {
	// PaymentID identifies the payment; OperationID is the coordinator's
	// operation that created it (unique); Reference joins it to the
	// history; Status is pending, succeeded or failed.
	PaymentID   string
	OperationID string
	Actor       string
	Amount      string
	Currency    string
	Reference   string
	Status      string
}

// Charge is one row of the bank's ledger: the business effect.
type Charge struct {
	// ChargeID identifies the charge; OperationID the operation it was
	// made for (not unique: two rows are a double charge).
	ChargeID    string
	OperationID string
	Actor       string
}

// State is the final state of the stores, read once after the drill healed.
type State struct {
	Records  []Record
	Fences   []Fence
	Audit    []Audit
	Payments []Payment
	Charges  []Charge
	// DBNow is the database's clock when the state was read; leases are
	// measured against it.
	DBNow time.Time
}

// ReadState reads the whole final state through pool: the store's tables
// and the demo ledger's. It reads in one REPEATABLE READ transaction so
// the tables agree with one another.
func ReadState(ctx context.Context, pool *pgxpool.Pool) (State, error) {
	var st State
	err := readTx(ctx, pool, func(tx pgx.Tx) error {
		if err := readStore(ctx, tx, &st, nil); err != nil {
			return err
		}
		return readLedger(ctx, tx, &st)
	})
	if err != nil {
		return State{}, fmt.Errorf("validate: read state: %w", err)
	}
	return st, nil
}

// StorePart is one database of a store split over several (the patroni
// backend's clusters): its pool, and which shards' fences it holds (a
// shard's fence has an owner only in its own cluster).
type StorePart struct {
	Name   string
	Pool   *pgxpool.Pool
	Fences func(shard int) bool
}

// ReadStateParts reads the final state of a store split over parts, each
// in its own REPEATABLE READ transaction, and the demo ledger through
// ledger: records and audit rows of every part, each shard's fence from
// the part that holds it. DBNow is the first part's clock.
func ReadStateParts(ctx context.Context, parts []StorePart, ledger *pgxpool.Pool) (State, error) {
	var st State
	for i, part := range parts {
		var ps State
		if err := readTx(ctx, part.Pool, func(tx pgx.Tx) error { return readStore(ctx, tx, &ps, part.Fences) }); err != nil {
			return State{}, fmt.Errorf("validate: read state of %s: %w", part.Name, err)
		}
		if i == 0 {
			st.DBNow = ps.DBNow
		}
		st.Records = append(st.Records, ps.Records...)
		st.Fences = append(st.Fences, ps.Fences...)
		st.Audit = append(st.Audit, ps.Audit...)
	}
	slices.SortStableFunc(st.Records, func(a, b Record) int { return a.CreatedAt.Compare(b.CreatedAt) })
	slices.SortStableFunc(st.Fences, func(a, b Fence) int { return a.Shard - b.Shard })
	slices.SortStableFunc(st.Audit, func(a, b Audit) int { return a.At.Compare(b.At) })
	if err := readTx(ctx, ledger, func(tx pgx.Tx) error { return readLedger(ctx, tx, &st) }); err != nil {
		return State{}, fmt.Errorf("validate: read the ledger: %w", err)
	}
	return st, nil
}

func readTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// readStore reads the coordinator's tables into st; fences, when set,
// keeps only the shards whose fence this database holds.
func readStore(ctx context.Context, tx pgx.Tx, st *State, fences func(int) bool) error {
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&st.DBNow); err != nil {
		return err
	}
	var err error
	if st.Records, err = readRecords(ctx, tx); err != nil {
		return fmt.Errorf("records: %w", err)
	}
	shards, err := shardCount(ctx, tx)
	if err != nil {
		return fmt.Errorf("shard count: %w", err)
	}
	if st.Fences, err = collect(ctx, tx, `SELECT shard, epoch, owner_region FROM shard_fences
		WHERE shard < `+fmt.Sprint(shards)+` ORDER BY shard`,
		func(r pgx.Rows, f *Fence) error { return r.Scan(&f.Shard, &f.Epoch, &f.OwnerRegion) }); err != nil {
		return fmt.Errorf("fences: %w", err)
	}
	if fences != nil {
		st.Fences = slices.DeleteFunc(st.Fences, func(f Fence) bool { return !fences(f.Shard) })
	}
	if st.Audit, err = collect(ctx, tx, `SELECT at, action, detail FROM repair_audit ORDER BY at, id`,
		func(r pgx.Rows, a *Audit) error { return r.Scan(&a.At, &a.Action, &a.Detail) }); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// readLedger reads the demo ledger (payments and bank charges) into st.
func readLedger(ctx context.Context, tx pgx.Tx, st *State) error {
	var err error
	if st.Payments, err = collect(ctx, tx, `SELECT payment_id::TEXT, operation_id::TEXT, actor, amount::TEXT,
		currency, reference, status FROM payments ORDER BY payment_id`,
		func(r pgx.Rows, p *Payment) error {
			return r.Scan(&p.PaymentID, &p.OperationID, &p.Actor, &p.Amount, &p.Currency, &p.Reference, &p.Status)
		}); err != nil {
		return fmt.Errorf("payments: %w", err)
	}
	if st.Charges, err = collect(ctx, tx, `SELECT charge_id::TEXT, operation_id, actor FROM bank_charges ORDER BY charge_id`,
		func(r pgx.Rows, c *Charge) error { return r.Scan(&c.ChargeID, &c.OperationID, &c.Actor) }); err != nil {
		return fmt.Errorf("charges: %w", err)
	}
	return nil
}

// shardCount is the deployment's shard count: shard_config's, when the
// store has that table (fence rows past it are unused leftovers of the
// first migration), else every fence row counts.
func shardCount(ctx context.Context, tx pgx.Tx) (int, error) {
	var tables int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name = 'shard_config'`).Scan(&tables); err != nil {
		return 0, err
	}
	if tables == 0 {
		return math.MaxInt32, nil
	}
	var n int
	err := tx.QueryRow(ctx, `SELECT shards FROM shard_config WHERE id = 1`).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return math.MaxInt32, nil // not bootstrapped: every row counts, and none has an owner
	}
	return n, err
}

func readRecords(ctx context.Context, tx pgx.Tx) ([]Record, error) {
	return collect(ctx, tx, `SELECT actor_scope, endpoint, key_hash, operation_id::TEXT, state, attempts, shard, epoch,
		COALESCE(response_status, 0), COALESCE(response_body, ''::BYTEA), COALESCE(resource_id, ''),
		lease_expires_at, created_at, updated_at FROM idempotency_records ORDER BY created_at`,
		func(r pgx.Rows, rec *Record) error {
			var kh, body []byte
			var lease *time.Time
			if err := r.Scan(&rec.ActorScope, &rec.Endpoint, &kh, &rec.OperationID, &rec.State, &rec.Attempts,
				&rec.Shard, &rec.Epoch, &rec.ResponseStatus, &body, &rec.ResourceID, &lease, &rec.CreatedAt,
				&rec.UpdatedAt); err != nil {
				return err
			}
			copy(rec.KeyHash[:], kh)
			if rec.ResponseStatus != 0 {
				rec.ResponseHash = hashBytes(body)
			}
			if lease != nil {
				rec.LeaseExpiresAt = *lease
			}
			return nil
		})
}

// collect runs q and scans every row with scan.
func collect[T any](ctx context.Context, tx pgx.Tx, q string, scan func(pgx.Rows, *T) error) ([]T, error) {
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := scan(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
