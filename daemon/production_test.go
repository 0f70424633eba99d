package daemon_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcoord/idemcoord/clock"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/sqlstore"
)

// insertRecord writes one record in state, expired (expires_at in the
// past) when expired, with a lease that ran out an hour ago.
func insertRecord(t *testing.T, s *sqlstore.Store, key, state string, expired bool) {
	t.Helper()
	expires := "now() + interval '1 day'"
	if expired {
		expires = "now() - interval '1 hour'"
	}
	_, err := s.Pool().Exec(context.Background(), `INSERT INTO idempotency_records (actor_scope, endpoint,
		key_hash, operation_id, fingerprint, fingerprint_version, state, version, lease_expires_at, shard, epoch,
		created_at, updated_at, expires_at) VALUES ('t/u', 'create-payment', $1, $2, '\x00', 1, $3, 1,
		now() - interval '1 hour', 0, 1, now(), now(), `+expires+`)`, []byte(key), uuid.New(), state)
	if err != nil {
		t.Fatal(err)
	}
}

// scrape returns /metrics as a map from "name{labels}" to value.
func scrape(t *testing.T, addr string) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		out[line[:i]] = line[i+1:]
	}
	return out
}

// value finds the one series of name whose labels include every pair of
// want, and returns its value.
func value(t *testing.T, m map[string]string, name string, want ...string) string {
	t.Helper()
	var found []string
	for series, v := range m {
		if !strings.HasPrefix(series, name+"{") {
			continue
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(series, w)
		}
		if ok {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series, want 1", name, want, len(found))
	}
	return found[0]
}

func TestDaemonReportsAFailedListener(t *testing.T) {
	cfg := review2Config(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(t.Context(), cfg, daemon.Options{Logger: quiet(), Migrate: true, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	if err := d.Err(); err != nil {
		t.Fatalf("Err while serving = %v, want nil", err)
	}
	ln.Close() // the listener fails under the server
	<-d.Done()
	if d.Err() == nil {
		t.Fatal("Err = nil after the listener failed; idemd run would exit 0")
	}
}

func TestDaemonDoneWithoutErrorAfterClose(t *testing.T) {
	cfg := review2Config(t, nil)
	d, err := daemon.Start(t.Context(), cfg, daemon.Options{Logger: quiet(), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-d.Done()
	if err := d.Err(); err != nil {
		t.Fatalf("Err after Close = %v, want nil", err)
	}
}

func TestStartRefusesAStoreWithoutSchema(t *testing.T) {
	cfg := review2Config(t, nil)
	_, err := daemon.Start(t.Context(), cfg, daemon.Options{Logger: quiet()})
	if !errors.Is(err, sqlstore.ErrSchemaMissing) || !strings.Contains(err.Error(), "idemctl migrate") {
		t.Fatalf("Start on an empty database: %v, want sqlstore.ErrSchemaMissing naming idemctl migrate", err)
	}
}

func TestReadyzNamesTheUnusablePart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	d, err := daemon.Start(ctx, review2Config(t, ec.Endpoints()), daemon.Options{Logger: quiet(), Migrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	readyz := func() (int, string) {
		resp, err := http.Get("http://" + d.Addr() + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz = %d %q, want 200", code, body)
	}
	ec.Kill(0)
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "etcd liveness") {
		t.Errorf("/readyz with etcd down = %d %q, want 503 naming etcd liveness", code, body)
	}
	d.Store().Close()
	if code, body := readyz(); code != http.StatusServiceUnavailable || !strings.Contains(body, "not ready: store") {
		t.Errorf("/readyz with the store closed = %d %q, want 503 naming the store", code, body)
	}
}

func TestCleanupLoopDeletesOnlyExpiredFinishedRecords(t *testing.T) {
	cfg := review2Config(t, nil)
	cfg.Cleanup.BatchSize = 2 // five records: three batches in one pass
	fake := clock.NewFake(time.Now())
	d, err := daemon.Start(t.Context(), cfg, daemon.Options{Logger: quiet(), Migrate: true, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	for i := range 5 {
		insertRecord(t, sqlOf(t, d), fmt.Sprint("done-", i), "COMPLETED", true)
	}
	insertRecord(t, sqlOf(t, d), "running", "IN_PROGRESS", true)
	insertRecord(t, sqlOf(t, d), "unknown", "OUTCOME_UNKNOWN", true)
	insertRecord(t, sqlOf(t, d), "fresh", "COMPLETED", false)

	fake.BlockUntil(2) // the cleanup and gauge loops wait for their interval
	fake.Advance(cfg.Cleanup.Interval)
	fake.BlockUntil(2) // both ran their pass and wait again

	var left []string
	rows, err := sqlOf(t, d).Pool().Query(t.Context(), "SELECT convert_from(key_hash, 'UTF8') FROM idempotency_records ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		rows.Scan(&k)
		left = append(left, k)
	}
	rows.Close()
	if got, want := strings.Join(left, ","), "fresh,running,unknown"; got != want {
		t.Errorf("records after a cleanup pass: %s, want %s", got, want)
	}
	m := scrape(t, d.Addr())
	if got := value(t, m, "idemcoord_cleanup_deleted_total"); got != "5" {
		t.Errorf("idemcoord_cleanup_deleted_total = %s, want 5", got)
	}
}

// TestCleanupPassKeepsUpBeyondTwentyBatches: one cleanup pass deletes a
// backlog of more than 20 full batches (it used to stop at 20: 10,000
// records a minute with the defaults, fewer than a busy region's first
// runs expire).
func TestCleanupPassKeepsUpBeyondTwentyBatches(t *testing.T) {
	cfg := review2Config(t, nil)
	cfg.Cleanup.BatchSize = 2
	fake := clock.NewFake(time.Now())
	d, err := daemon.Start(t.Context(), cfg, daemon.Options{Logger: quiet(), Migrate: true, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	for i := range 45 { // 23 batches of 2
		insertRecord(t, sqlOf(t, d), fmt.Sprint("done-", i), "COMPLETED", true)
	}
	fake.BlockUntil(2)
	fake.Advance(cfg.Cleanup.Interval)
	fake.BlockUntil(2) // the pass ran and the loop waits again

	var left int
	if err := sqlOf(t, d).Pool().QueryRow(t.Context(), "SELECT count(*) FROM idempotency_records").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d expired records left after one pass, want 0", left)
	}
}

func TestGaugesCountRecordsAndShards(t *testing.T) {
	cfg := review2Config(t, nil)
	cfg.Cleanup.Disabled = true
	fake := clock.NewFake(time.Now())
	d, err := daemon.Start(t.Context(), cfg, daemon.Options{Logger: quiet(), Migrate: true, Clock: fake})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Shutdown(context.Background())
	insertRecord(t, sqlOf(t, d), "a", "COMPLETED", true)
	insertRecord(t, sqlOf(t, d), "b", "COMPLETED", false)
	insertRecord(t, sqlOf(t, d), "c", "IN_PROGRESS", false) // lease ran out an hour ago: stuck
	insertRecord(t, sqlOf(t, d), "d", "OUTCOME_UNKNOWN", false)
	fake.BlockUntil(1)
	fake.Advance(time.Minute)
	fake.BlockUntil(1)
	m := scrape(t, d.Addr())
	for _, c := range []struct {
		name  string
		label []string
		want  string
	}{
		{"idemcoord_operations", []string{`state="COMPLETED"`}, "2"},
		{"idemcoord_operations", []string{`state="OUTCOME_UNKNOWN"`}, "1"},
		{"idemcoord_operations", []string{`state="PENDING"`}, "0"},
		{"idemcoord_operations_stuck", nil, "1"},
		{"idemcoord_cleanup_backlog", nil, "1"},
		{"idemcoord_shards", []string{`state="ACTIVE"`}, fmt.Sprint(cfg.Shards)},
		{"idemcoord_shards", []string{`state="FENCING"`}, "0"},
	} {
		if got := value(t, m, c.name, append(c.label, `region="us-east"`)...); got != c.want {
			t.Errorf("%s%v = %s, want %s", c.name, c.label, got, c.want)
		}
	}
}

// sqlOf is d's store as the SQL store it opened by default, for the
// tests that read and seed its tables directly.
func sqlOf(t *testing.T, d *daemon.Daemon) *sqlstore.Store {
	t.Helper()
	s, ok := d.Store().(*sqlstore.Store)
	if !ok {
		t.Fatalf("daemon store is %T, want the default *sqlstore.Store", d.Store())
	}
	return s
}
