package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
)

// Injector returns a failpoint.Injector over c: each fault kind is mapped
// to the fault interface c implements for it, or ErrUnsupported.
func Injector(c Cluster) failpoint.Injector { return &injector{c: c, killed: map[int]string{}} }

type injector struct {
	c Cluster

	mu     sync.Mutex
	killed map[int]string // fault index -> etcd member killed for it
	next   int
}

var _ failpoint.Injector = (*injector)(nil)

func unsupported(f failpoint.Fault, need string) error {
	return fmt.Errorf("%w: %s needs %s", failpoint.ErrUnsupported, f.Kind, need)
}

// Inject implements failpoint.Injector.
func (in *injector) Inject(ctx context.Context, f failpoint.Fault) error {
	switch f.Kind {
	case failpoint.KillRegion, failpoint.PauseRegion, failpoint.ShortPause:
		p, ok := in.c.(Processes)
		if !ok {
			return unsupported(f, "cluster.Processes")
		}
		if f.Kind == failpoint.KillRegion {
			return p.Kill(ctx, f.Region)
		}
		return p.Pause(ctx, f.Region)
	case failpoint.CutPeer:
		pl, ok := in.c.(PeerLinks)
		if !ok {
			return unsupported(f, "cluster.PeerLinks")
		}
		if err := pl.CutTo(ctx, f.Region, failpoint.LinkPeer, f.Peer); err != nil {
			return err
		}
		return pl.CutTo(ctx, f.Peer, failpoint.LinkPeer, f.Region)
	case failpoint.CutEtcd, failpoint.CutSQL, failpoint.CutBoth, failpoint.Latency, failpoint.ResetPeer:
		l, ok := in.c.(Links)
		if !ok {
			return unsupported(f, "cluster.Links")
		}
		for _, link := range linksOf(f) {
			var err error
			switch f.Kind {
			case failpoint.Latency:
				err = l.Slow(ctx, f.Region, link, f.Latency, f.Jitter)
			case failpoint.ResetPeer:
				err = l.Reset(ctx, f.Region, link)
			default:
				err = l.Cut(ctx, f.Region, link)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case failpoint.KillEtcdLeader:
		e, ok := in.c.(Etcd)
		if !ok {
			return unsupported(f, "cluster.Etcd")
		}
		leader, err := e.Leader(ctx)
		if err != nil {
			return err
		}
		if err := e.KillMember(ctx, leader); err != nil {
			return err
		}
		in.mu.Lock()
		in.killed[in.next] = leader
		in.mu.Unlock()
		return nil
	case failpoint.CrashPoint:
		cp, ok := in.c.(CrashPoints)
		if !ok {
			return unsupported(f, "cluster.CrashPoints")
		}
		return cp.Arm(ctx, f.Region, f.Point)
	case failpoint.ClockSkew:
		ck, ok := in.c.(Clocks)
		if !ok {
			return unsupported(f, "cluster.Clocks")
		}
		return ck.Skew(ctx, f.Region, f.Skew)
	}
	return fmt.Errorf("%w: kind %q", failpoint.ErrUnsupported, f.Kind)
}

// Heal implements failpoint.Injector. Faults run one at a time (Plan never
// overlaps them), so the etcd member to restart is the last one killed.
func (in *injector) Heal(ctx context.Context, f failpoint.Fault) error {
	switch f.Kind {
	case failpoint.KillRegion, failpoint.PauseRegion, failpoint.ShortPause:
		p, ok := in.c.(Processes)
		if !ok {
			return unsupported(f, "cluster.Processes")
		}
		if f.Kind == failpoint.KillRegion {
			return p.Restart(ctx, f.Region)
		}
		return p.Resume(ctx, f.Region)
	case failpoint.CutPeer:
		pl, ok := in.c.(PeerLinks)
		if !ok {
			return unsupported(f, "cluster.PeerLinks")
		}
		return errors.Join(pl.RestoreTo(ctx, f.Region, failpoint.LinkPeer, f.Peer),
			pl.RestoreTo(ctx, f.Peer, failpoint.LinkPeer, f.Region))
	case failpoint.CutEtcd, failpoint.CutSQL, failpoint.CutBoth, failpoint.Latency, failpoint.ResetPeer:
		l, ok := in.c.(Links)
		if !ok {
			return unsupported(f, "cluster.Links")
		}
		for _, link := range linksOf(f) {
			if err := l.Restore(ctx, f.Region, link); err != nil {
				return err
			}
		}
		return nil
	case failpoint.KillEtcdLeader:
		e, ok := in.c.(Etcd)
		if !ok {
			return unsupported(f, "cluster.Etcd")
		}
		in.mu.Lock()
		member := in.killed[in.next]
		delete(in.killed, in.next)
		in.next++
		in.mu.Unlock()
		return e.RestartMember(ctx, member)
	case failpoint.CrashPoint:
		cp, ok := in.c.(CrashPoints)
		if !ok {
			return unsupported(f, "cluster.CrashPoints")
		}
		return cp.Disarm(ctx, f.Region, f.Point)
	case failpoint.ClockSkew:
		ck, ok := in.c.(Clocks)
		if !ok {
			return unsupported(f, "cluster.Clocks")
		}
		return ck.Skew(ctx, f.Region, 0)
	}
	return nil
}

// linksOf returns the links a link fault acts on.
func linksOf(f failpoint.Fault) []failpoint.Link {
	switch f.Kind {
	case failpoint.CutEtcd:
		return []failpoint.Link{failpoint.LinkEtcd}
	case failpoint.CutSQL:
		return []failpoint.Link{failpoint.LinkSQL}
	case failpoint.CutBoth:
		return []failpoint.Link{failpoint.LinkEtcd, failpoint.LinkSQL}
	}
	return []failpoint.Link{f.Link}
}
