package ownership

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// LeftMarkerTTL is how long a left marker stays in etcd: long enough for
// every tracker to read it after the liveness key's delete (a watch
// event, or a poll a second later), short enough that markers of
// instance names never used again do not pile up.
const LeftMarkerTTL = 30 * time.Second

// Leave is the clean shutdown of an instance: it writes a left marker
// naming the current registration (its create revision), then revokes
// the lease as Close does. A tracker that sees a region's last
// registrations all left this way fails the region at once, without the
// confirmation delay that a lease lost to a crash or a stall gets: the
// instance said it is gone. Call it once the instance has drained (it no
// longer serves); use Close to stop without handing over. The marker is
// best effort, bounded by RegisterTimeout: without it the region fails
// over after the confirmation delay, as after a crash (and when etcd did
// not answer at all, the lease is left to expire instead of waiting for a
// revoke that would not be answered either).
func (l *Liveness) Leave() {
	l.mu.Lock()
	s, rev, lctx := l.session, l.createRev, l.ctx
	l.mu.Unlock()
	revoke := true
	if s != nil && rev != 0 {
		ctx, cancel := context.WithTimeout(lctx, l.cfg.RegisterTimeout)
		if err := l.markLeft(ctx, rev); err != nil {
			l.cfg.Logger.Warn("liveness: left marker not written; the region fails over after the confirmation delay",
				"key", l.key, "err", err)
			// etcd did not answer within the whole budget: a revoke
			// would not either, and the lease expires by itself.
			revoke = !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		}
		cancel()
	}
	l.stop(revoke)
}

// markLeft puts the left marker of registration rev under a lease of its
// own, only while rev is still the registered key.
func (l *Liveness) markLeft(ctx context.Context, rev int64) error {
	lease, err := l.cfg.Client.Grant(ctx, int64(LeftMarkerTTL/time.Second))
	if err != nil {
		return err
	}
	resp, err := l.cfg.Client.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.key), "=", rev)).
		Then(clientv3.OpPut(LeftKey(l.cfg.Prefix, l.cfg.Region, l.cfg.Instance), strconv.FormatInt(rev, 10),
			clientv3.WithLease(lease.ID))).Commit()
	if err != nil {
		return err
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: %s is no longer registration %d", ErrNotLive, l.key, rev)
	}
	return nil
}

// LeftKey returns the key of an instance's left marker: Prefix + "left/"
// + Region + "/" + Instance, holding the create revision of the
// registration that left.
func LeftKey(prefix, region, instance string) string {
	return leftPrefix(prefix) + region + "/" + instance
}

func leftPrefix(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return prefix + "left/"
}

// Registrations is one linearizable read of every liveness key and every
// left marker.
type Registrations struct {
	// Revision is the etcd revision of the read.
	Revision int64
	// Instances are the registered instances, sorted by region and name.
	Instances []Instance
	// Left holds the create revisions of the registrations whose
	// instances left cleanly (Liveness.Leave).
	Left map[int64]bool
}

// ReadRegistrations reads the liveness keys and the left markers at one
// revision (one transaction).
func ReadRegistrations(ctx context.Context, cli *clientv3.Client, prefix string) (Registrations, error) {
	resp, err := cli.Txn(ctx).Then(clientv3.OpGet(livenessPrefix(prefix), clientv3.WithPrefix()),
		clientv3.OpGet(leftPrefix(prefix), clientv3.WithPrefix())).Commit()
	if err != nil {
		return Registrations{}, fmt.Errorf("ownership: read registrations: %w", err)
	}
	out := Registrations{Revision: resp.Header.Revision, Left: map[int64]bool{}}
	out.Instances = instancesOf(prefix, resp.Responses[0].GetResponseRange().Kvs)
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if !strings.Contains(strings.TrimPrefix(string(kv.Key), leftPrefix(prefix)), "/") {
			continue
		}
		if rev, err := strconv.ParseInt(string(kv.Value), 10, 64); err == nil && rev > 0 {
			out.Left[rev] = true
		}
	}
	return out, nil
}
