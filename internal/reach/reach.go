// Package reach bounds each connection step of a process (the store, etcd)
// by a short timeout and, when one fails, says which part failed, at which
// address, and why: "connection refused", "TCP connects but nothing
// answers", a TLS or authentication error. A bare "context deadline
// exceeded" after two minutes tells an operator nothing.
package reach

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultTimeout bounds one connection step: a store or an etcd cluster
// that is up answers a connect and a first query in milliseconds, even
// across regions; five seconds absorbs a slow TLS handshake or a leader
// election, and fails a hung peer long before anyone gives up waiting.
const DefaultTimeout = 5 * time.Second

// probeTimeout bounds the TCP connect made to explain a timeout.
const probeTimeout = time.Second

// Error is a failed connection step: the part ("store", "etcd"), the
// addresses it was reached at, and the cause.
type Error struct {
	// Part is what was being connected to.
	Part string
	// Addrs are its addresses (no credentials).
	Addrs []string
	// Cause explains the failure in words ("" when Err says it all).
	Cause string
	// Err is the underlying error.
	Err error
}

// Error names the part, the addresses and the cause.
func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %s: ", e.Part, strings.Join(e.Addrs, ","))
	if e.Cause != "" {
		// The cause says it better than "context deadline exceeded".
		return msg + e.Cause
	}
	return msg + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Step runs fn with a context bounded by timeout (DefaultTimeout when 0).
// When fn fails it returns an *Error naming part and addrs; when the
// timeout ran out, it connects to each address over TCP to say whether
// the peer is unreachable or reachable but silent.
func Step(ctx context.Context, part string, addrs []string, timeout time.Duration, fn func(ctx context.Context) error) error {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := fn(sctx)
	if err == nil {
		return nil
	}
	e := &Error{Part: part, Addrs: addrs, Err: err}
	if errors.Is(err, context.DeadlineExceeded) || sctx.Err() != nil {
		e.Cause = fmt.Sprintf("no answer within %s (%s)", timeout, probe(ctx, addrs))
	}
	return e
}

// probe says what a TCP connect to each address finds.
func probe(ctx context.Context, addrs []string) string {
	var out []string
	for _, a := range addrs {
		if strings.HasPrefix(a, "/") {
			continue // a unix socket directory
		}
		a, _, _ = strings.Cut(a, "/") // host:port/database
		d := net.Dialer{Timeout: probeTimeout}
		c, err := d.DialContext(ctx, "tcp", a)
		if err != nil {
			var op *net.OpError
			if errors.As(err, &op) && op.Err != nil {
				err = op.Err
			}
			out = append(out, fmt.Sprintf("%s: %v", a, err))
			continue
		}
		c.Close()
		out = append(out, a+": TCP connects, nothing answers")
	}
	if len(out) == 0 {
		return "no TCP address to probe"
	}
	return strings.Join(out, "; ")
}

// StoreAddrs returns the host:port addresses of a PostgreSQL/CockroachDB
// connection string, without credentials, and the database name.
func StoreAddrs(dsn string) (addrs []string, database string, err error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		// The message of a *pgconn.ParseConfigError quotes the whole
		// DSN: say only why.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			return nil, "", fmt.Errorf("store dsn: %w", pe.Unwrap())
		}
		return nil, "", errors.New("store dsn: not a valid PostgreSQL connection string (postgres://USER@HOST:PORT/DB?...)")
	}
	addrs = append(addrs, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	for _, fb := range cfg.Fallbacks {
		a := net.JoinHostPort(fb.Host, strconv.Itoa(int(fb.Port)))
		if a != addrs[len(addrs)-1] {
			addrs = append(addrs, a)
		}
	}
	return addrs, cfg.Database, nil
}

// EtcdAddrs returns the host:port of each etcd endpoint URL.
func EtcdAddrs(endpoints []string) []string {
	var out []string
	for _, ep := range endpoints {
		if u, err := url.Parse(ep); err == nil && u.Host != "" {
			out = append(out, u.Host)
			continue
		}
		out = append(out, ep)
	}
	return out
}

// Store checks, within timeout, that the store at dsn accepts a
// connection (TLS and authentication included), and names its address
// when it does not. It holds no connection afterwards.
func Store(ctx context.Context, dsn string, timeout time.Duration) error {
	addrs, db, err := StoreAddrs(dsn)
	if err != nil {
		return err
	}
	return Step(ctx, "store", display(addrs, db), timeout, func(ctx context.Context) error {
		c, err := pgconn.Connect(ctx, dsn)
		if err != nil {
			return connectCause(err)
		}
		return c.Close(ctx)
	})
}

// StoreDisplay returns the store's addresses as errors and logs show
// them: host:port/database, no credentials.
func StoreDisplay(dsn string) []string {
	addrs, db, err := StoreAddrs(dsn)
	if err != nil {
		return []string{"(invalid dsn)"}
	}
	return display(addrs, db)
}

func display(addrs []string, db string) []string {
	out := append([]string(nil), addrs...)
	if db != "" && len(out) > 0 {
		out[0] += "/" + db
	}
	return out
}

// connectCause returns the innermost cause of a pgconn connect error: its
// own message repeats the user and database once per address tried.
func connectCause(err error) error {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) && ce.Unwrap() != nil {
		return ce.Unwrap()
	}
	return err
}
