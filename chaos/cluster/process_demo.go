package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/demo/payments"
)

// demoBankTimeout bounds a payments server's call to the bank.
const demoBankTimeout = 10 * time.Second

// demo is the bank and one demo payments server per region, served from
// the drill's process over one pool: the upstreams are not what a drill
// kills, and each region's upstream link (its own payments server, behind
// its own proxy) is what its faults act on.
type demo struct {
	pool     *pgxpool.Pool
	bankURL  string
	payments map[string]string // region -> its payments server's host:port
	servers  []*http.Server
	pays     []*payments.Server // closed after the servers (their background releases)
}

// startDemo migrates the demo tables and serves the bank and a payments
// server for each region, logging to log.
func startDemo(ctx context.Context, dsn string, regions []string, log *slog.Logger) (_ *demo, err error) {
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	pc.MaxConns = 32
	d := &demo{payments: map[string]string{}}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if d.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, err
	}
	if err := errors.Join(bank.Migrate(ctx, d.pool), payments.Migrate(ctx, d.pool)); err != nil {
		return nil, err
	}
	addr, err := d.serve(bank.New(d.pool, bank.Options{Logger: log.With("demo", "bank")}))
	if err != nil {
		return nil, err
	}
	d.bankURL = "http://" + addr
	for _, r := range regions {
		pay := payments.New(d.pool, d.bankURL, payments.Options{BankTimeout: demoBankTimeout,
			Logger: log.With("demo", "payments", "region", r)})
		d.pays = append(d.pays, pay)
		if d.payments[r], err = d.serve(pay); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// serve serves h on a free loopback port and returns its address.
func (d *demo) serve(h http.Handler) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	d.servers = append(d.servers, srv)
	go srv.Serve(ln)
	return ln.Addr().String(), nil
}

func (d *demo) close() {
	for _, s := range d.servers {
		s.Close()
	}
	for _, p := range d.pays {
		p.Close()
	}
	if d.pool != nil {
		d.pool.Close()
	}
}
