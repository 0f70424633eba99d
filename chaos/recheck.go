package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcoord/idemcoord/chaos/cluster"
	"github.com/idemcoord/idemcoord/chaos/history"
	"github.com/idemcoord/idemcoord/chaos/traffic"
	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/clock"
)

// Store is what Recheck reads: the SQL store's URL and, when the cluster
// has one, the etcd directory.
type Store interface {
	DSN() string
}

var _ Store = (cluster.Cluster)(nil)

// Recheck judges h against the store's current state: the final SQL state
// and ledger, the etcd directory when s is a cluster.Directory, and its
// revision history when s is a cluster.DirectoryHistory. It is
// the validate stage of Run, and how a saved history is checked again.
func Recheck(ctx context.Context, h history.History, s Store, opts validate.Options) (validate.Result, error) {
	st, err := readState(ctx, s)
	if err != nil {
		return validate.Result{}, fmt.Errorf("chaos: check: %w", err)
	}
	if d, ok := s.(cluster.Directory); ok && opts.Directory == nil {
		if opts.Directory, err = d.Directory(ctx); err != nil {
			return validate.Result{}, fmt.Errorf("chaos: check: etcd directory: %w", err)
		}
	}
	if d, ok := s.(cluster.DirectoryHistory); ok && opts.DirectoryHistory == nil {
		if opts.DirectoryHistory, err = d.DirectoryHistory(ctx); err != nil {
			return validate.Result{}, fmt.Errorf("chaos: check: etcd directory history: %w", err)
		}
	}
	if h, ok := s.(cluster.Homes); ok && opts.InitialOwner == nil {
		opts.InitialOwner = h.Home
	}
	if opts.LedgerBody == nil {
		opts.LedgerBody = traffic.LedgerBody
	}
	return validate.Check(h, st, opts), nil
}

// partsReadWait bounds the wait for every cluster of a split store to
// have a primary to read the final state from.
const partsReadWait = 3 * time.Minute

// readState reads the final state: through s.DSN(), or, when s's store
// is split over several databases (cluster.StoreParts: one Patroni
// cluster per home region), from each of them and the ledger's.
func readState(ctx context.Context, s Store) (validate.State, error) {
	if sp, ok := s.(cluster.StoreParts); ok {
		if parts, ledger := sp.StoreParts(); len(parts) > 0 {
			var vparts []validate.StorePart
			for _, part := range parts {
				pool, err := pgxpool.New(ctx, part.DSN)
				if err != nil {
					return validate.State{}, err
				}
				defer pool.Close()
				vparts = append(vparts, validate.StorePart{Name: part.Name, Pool: pool, Fences: part.Fences})
			}
			lp, err := pgxpool.New(ctx, ledger)
			if err != nil {
				return validate.State{}, err
			}
			defer lp.Close()
			// A cluster may still be without a primary (a failover that
			// ended late, a rejoin under load): its final state is read
			// from its primary once there is one, within a bound.
			wctx, cancel := context.WithTimeout(ctx, partsReadWait)
			defer cancel()
			for {
				st, err := validate.ReadStateParts(ctx, vparts, lp)
				if err == nil || wctx.Err() != nil {
					return st, err
				}
				if clock.Sleep(wctx, clock.Real(), 2*time.Second) != nil {
					return st, err
				}
			}
		}
	}
	pool, err := pgxpool.New(ctx, s.DSN())
	if err != nil {
		return validate.State{}, err
	}
	defer pool.Close()
	return validate.ReadState(ctx, pool)
}

// DSN is a Store that is only a database URL: Recheck on a saved history
// against a store whose cluster is gone (`idemctl drill check`).
type DSN string

// DSN implements Store.
func (d DSN) DSN() string { return string(d) }
