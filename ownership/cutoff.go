package ownership

import "time"

// CutOffSpan is how far apart the first and the last of an instance's
// unanswered etcd requests (keepalives, registrations) must have been
// sent, with none answered in between, before CutOff reports the instance
// cut off from etcd. The requests go one at a time, so it takes two of
// them at least. A process resumed after a pause finds only the one
// request it had in flight unanswered (a span of zero), and the next is
// answered at once by an etcd it can reach; a process that cannot reach
// etcd has the span with its second unanswered keepalive, each waiting
// TTL/3 for its answer: about 1.3 s after the cut at the default TTL (2
// s), before etcd expires its lease.
const CutOffSpan = 600 * time.Millisecond

// CutOff reports whether this instance knows it is cut off from etcd: no
// answered keepalive proves its lease any more (Live fails), and every
// etcd request it sent over at least CutOffSpan went unanswered (a
// timeout, a refused or reset connection, an error from a member without
// a quorum). Its peers' failover trackers read it from /healthz (see
// failover.PeerProbe): a region whose liveness key is gone and whose
// instance says it cannot reach etcd will not register again by itself,
// so its shards move without the confirmation delay. It is false while
// the instance is live, after any answer, and before the first
// registration.
func (l *Liveness) CutOff() bool {
	if l.Live() == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.unansweredFirst.IsZero() && l.unansweredLast.Sub(l.unansweredFirst) >= CutOffSpan
}

// answered notes that etcd answered a request sent at sent (even with
// "lease not found"): the instance can reach it.
func (l *Liveness) answered(sent time.Time) {
	l.mu.Lock()
	if !sent.Before(l.unansweredFirst) {
		l.unansweredFirst, l.unansweredLast = time.Time{}, time.Time{}
	}
	l.mu.Unlock()
}

// unanswered notes that a request sent at sent got no answer.
func (l *Liveness) unanswered(sent time.Time) {
	l.mu.Lock()
	if l.unansweredFirst.IsZero() || sent.Before(l.unansweredFirst) {
		l.unansweredFirst = sent
	}
	if sent.After(l.unansweredLast) {
		l.unansweredLast = sent
	}
	l.mu.Unlock()
}
