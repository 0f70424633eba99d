package patronitest

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Writer is a client that keeps writing to a cluster through its
// multi-host DSN, as the coordinator does: each request inserts one new
// row, and is held (retried on a fresh connection, the same row again,
// idempotently) until it is acknowledged or its hold runs out. A request
// whose hold ran out failed; an acknowledged row must survive any fault.
type Writer struct {
	dsn     string
	hold    time.Duration
	attempt time.Duration

	mu     sync.Mutex
	acks   []Ack
	failed int
	next   int64

	cancel context.CancelFunc
	done   chan struct{}
}

// Ack is one acknowledged request.
type Ack struct {
	// ID is the row's id.
	ID int64
	// Start is when the request began, At when its commit was
	// acknowledged, and Server the PostgreSQL address that acknowledged it.
	Start, At time.Time
	Server    string
	// Inserted is whether this attempt inserted the row. A retry of a
	// row an earlier, cancelled attempt committed (locally, and on the
	// standby) inserts nothing, writes no commit record and so waits for
	// no synchronous standby: it proves nothing about the new primary
	// committing.
	Inserted bool
}

// probeDDL is the table a Writer writes.
const probeDDL = `CREATE TABLE IF NOT EXISTS failover_probe (id bigint PRIMARY KEY, at timestamptz NOT NULL DEFAULT now())`

// StartWriter creates the probe table and starts writing. Each attempt
// (connect, insert, commit) has its own deadline, attempt: a frozen
// primary keeps its connections, and a commit waiting for a synchronous
// standby that is gone waits forever. Stop it with Stop.
func StartWriter(ctx context.Context, dsn string, hold, attempt time.Duration) (*Writer, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	_, err = conn.Exec(ctx, probeDDL)
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{dsn: dsn, hold: hold, attempt: attempt, cancel: cancel, done: make(chan struct{}), next: time.Now().UnixNano()}
	go w.run(ctx)
	return w, nil
}

func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		w.mu.Lock()
		w.next++
		id := w.next
		w.mu.Unlock()
		start := time.Now()
		for {
			if ctx.Err() != nil {
				return
			}
			if time.Since(start) > w.hold {
				w.mu.Lock()
				w.failed++
				w.mu.Unlock()
				break
			}
			var err error
			if conn == nil {
				cctx, cancel := context.WithTimeout(ctx, w.attempt)
				conn, err = pgx.Connect(cctx, w.dsn)
				cancel()
				if err != nil {
					conn = nil
					sleep(ctx, 20*time.Millisecond)
					continue
				}
			}
			actx, cancel := context.WithTimeout(ctx, w.attempt)
			tag, err := conn.Exec(actx, `INSERT INTO failover_probe (id) VALUES ($1) ON CONFLICT DO NOTHING`, id)
			cancel()
			if err != nil {
				// Ambiguous (a cancelled commit may have committed
				// locally): drop the connection, retry the same row.
				conn.Close(context.Background())
				conn = nil
				continue
			}
			server := ""
			if a := conn.PgConn().Conn().RemoteAddr(); a != nil {
				server = a.String()
			}
			w.mu.Lock()
			w.acks = append(w.acks, Ack{ID: id, Start: start, At: time.Now(), Server: server, Inserted: tag.RowsAffected() == 1})
			w.mu.Unlock()
			break
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// FirstAckAfter returns the first request acknowledged after t by a
// server other than not (a member's host:port) that inserted its row (a
// commit that needed the synchronous standby), waiting up to wait.
func (w *Writer) FirstAckAfter(ctx context.Context, t time.Time, not string, wait time.Duration) (Ack, bool) {
	deadline := time.Now().Add(wait)
	for {
		w.mu.Lock()
		for _, a := range w.acks {
			if a.At.After(t) && a.Inserted && !sameAddr(a.Server, not) {
				w.mu.Unlock()
				return a, true
			}
		}
		w.mu.Unlock()
		if time.Now().After(deadline) || ctx.Err() != nil {
			return Ack{}, false
		}
		sleep(ctx, 10*time.Millisecond)
	}
}

// Failed returns how many requests ran out of their hold so far.
func (w *Writer) Failed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// Acks returns the acknowledged requests so far.
func (w *Writer) Acks() []Ack {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Ack(nil), w.acks...)
}

// Stop stops writing and waits for the writer to end.
func (w *Writer) Stop() {
	w.cancel()
	<-w.done
}

// Lost returns the acknowledged rows missing from the cluster behind dsn
// (its primary): an acknowledged write must never be lost.
func Lost(ctx context.Context, dsn string, acks []Ack) ([]int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT id FROM failover_probe`)
	if err != nil {
		return nil, err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	set := make(map[int64]bool, len(have))
	for _, id := range have {
		set[id] = true
	}
	var lost []int64
	for _, a := range acks {
		if !set[a.ID] {
			lost = append(lost, a.ID)
		}
	}
	return lost, nil
}

func sameAddr(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	return pa == pb && (ha == hb || ha == "" || hb == "")
}
