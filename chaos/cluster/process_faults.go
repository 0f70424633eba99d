package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/idemcoord/idemcoord/chaos/failpoint"
	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/clock"
)

// healTimeout bounds a heal (a restart, a resume, a restored link, and
// the failback after it). A heal runs to its end even when the drill's
// main phase ends under it: a region left half-restarted, or shards left
// FENCING, would fail the settle phase for the wrong reason.
const healTimeout = 2 * time.Minute

// healing returns the context a heal runs under.
func healing(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
}

// Kill implements Processes: the region's idemd dies by SIGKILL in the
// middle of its work. Its upstream link hangs first (crashInFlight), so
// requests are in flight inside it when it dies: their claims stay in
// progress until their leases lapse and another region takes them over.
func (p *Process) Kill(ctx context.Context, region string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.region(region); err != nil {
		return err
	}
	if err := p.toxics.Cut(ctx, region, failpoint.LinkUpstream); err != nil {
		return err
	}
	err := clock.Sleep(ctx, clock.Real(), crashInFlight)
	if err == nil {
		if err = p.procs.Kill(ctx, region); err == nil {
			// The region is out: its failover is measured from here
			// (a region loss stops more parts after this).
			failpoint.TookEffect(ctx)
		}
	}
	return errors.Join(err, p.toxics.Restore(context.WithoutCancel(ctx), region, failpoint.LinkUpstream))
}

// Restart implements Processes: the region's idemd starts again on the
// same addresses, and once it is ready its home shards that another
// region took over are moved back to it, fenced and drained (a move
// under load).
func (p *Process) Restart(ctx context.Context, region string) error {
	ctx, cancel := healing(ctx)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.procs.Restart(ctx, region); err != nil {
		return err
	}
	return p.failback(ctx, region)
}

// pauseHold is how long a paused region's upstream answers are held
// back: longer than crashInFlight, so no answer of the calls in flight
// at SIGSTOP arrives before it.
const pauseHold = 10 * time.Second

// Pause implements Processes: SIGSTOP. The process cannot tell: no
// keepalive, no timer runs; past its liveness lease it is a zombie that
// still believes it owns its shards. Its upstream's answers are held back
// first (crashInFlight), so it stops with calls in flight that the
// upstream already ran: their operations are taken over once their leases
// lapse and their shards moved, and the zombie's own late finish must be
// fenced when it wakes.
func (p *Process) Pause(ctx context.Context, region string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.region(region); err != nil {
		return err
	}
	if err := p.toxics.Slow(ctx, region, failpoint.LinkUpstream, pauseHold, 0); err != nil {
		return err
	}
	err := clock.Sleep(ctx, clock.Real(), crashInFlight)
	if err == nil {
		err = p.procs.Pause(ctx, region)
	}
	return errors.Join(err, p.toxics.Restore(context.WithoutCancel(ctx), region, failpoint.LinkUpstream))
}

// Resume implements Processes: SIGCONT, then, once it is ready again
// (registered anew), the fenced failback of whatever home shards moved
// while it was stopped.
func (p *Process) Resume(ctx context.Context, region string) error {
	ctx, cancel := healing(ctx)
	defer cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.procs.Resume(ctx, region); err != nil {
		return err
	}
	return p.recover(ctx, region)
}

// recover makes region serve its home shards again after a fault: its
// process restarted if it died (a crash point, or it gave up on its
// stores), ready, then the failback.
func (p *Process) recover(ctx context.Context, region string) error {
	r, err := p.region(region)
	if err != nil {
		return err
	}
	if _, err := p.procs.PID(region); err != nil {
		if err := p.procs.Restart(ctx, region); err != nil {
			return err
		}
	} else if err := p.ready(ctx, r); err != nil {
		return err
	}
	return p.failback(ctx, region)
}

// Cut implements Links: every proxy of the link is blackholed.
func (p *Process) Cut(ctx context.Context, region string, link failpoint.Link) error {
	return p.toxics.Cut(ctx, region, link)
}

// Slow implements Links.
func (p *Process) Slow(ctx context.Context, region string, link failpoint.Link, latency, jitter time.Duration) error {
	return p.toxics.Slow(ctx, region, link, latency, jitter)
}

// Reset implements Links: the link's connections are reset as answers
// come back (on the SQL link, answers to COMMIT included).
func (p *Process) Reset(ctx context.Context, region string, link failpoint.Link) error {
	return p.toxics.Reset(ctx, region, link)
}

// Restore implements Links. A region cut from etcd lost its liveness
// lease and, past the confirmation delay, its shards: once its etcd and
// SQL links are both back (a cut of both heals one link after the other,
// and the region is not ready while its store is cut), the region fails
// back as after a restart.
func (p *Process) Restore(ctx context.Context, region string, link failpoint.Link) error {
	ctx, cancel := healing(ctx)
	defer cancel()
	if err := p.toxics.Restore(ctx, region, link); err != nil {
		return err
	}
	if (link != failpoint.LinkEtcd && link != failpoint.LinkSQL) ||
		!p.toxics.Clean(region, failpoint.LinkEtcd) || !p.toxics.Clean(region, failpoint.LinkSQL) {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recover(ctx, region)
}

// CutTo blackholes one of region's proxied links alone: its link to one
// etcd member (link etcd, target the member's region), or its forwards to
// one other region (link peer, target that region). RestoreTo undoes it.
func (p *Process) CutTo(ctx context.Context, region string, link failpoint.Link, target string) error {
	return p.toxics.CutTo(ctx, region, link, target)
}

// RestoreTo undoes CutTo.
func (p *Process) RestoreTo(ctx context.Context, region string, link failpoint.Link, target string) error {
	return p.toxics.RestoreTo(ctx, region, link, target)
}

// Leader implements Etcd.
func (p *Process) Leader(ctx context.Context) (string, error) { return p.members.Leader(ctx) }

// KillMember implements Etcd: the member (named by its region) stops
// hard, as a crash.
func (p *Process) KillMember(ctx context.Context, member string) error {
	return p.members.KillMember(ctx, member)
}

// RestartMember implements Etcd.
func (p *Process) RestartMember(ctx context.Context, member string) error {
	return p.members.RestartMember(ctx, member)
}

// Directory implements Directory: the etcd ownership directory, read by
// the drill's own client, for the checker's etcd-SQL agreement.
func (p *Process) Directory(ctx context.Context) (map[int]validate.DirectoryEntry, error) {
	entries, _, err := p.owners.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int]validate.DirectoryEntry, len(entries))
	for _, e := range entries {
		out[e.Shard] = validate.DirectoryEntry{Owner: e.Owner, Epoch: e.Epoch, State: string(e.State)}
	}
	return out, nil
}
