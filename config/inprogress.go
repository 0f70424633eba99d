package config

import (
	"time"
)

// Limits of InProgress. Each says why it has its value.
const (
	// MaxInProgressWait caps InProgress.Wait: a held request costs the
	// client a connection and the instance a goroutine, and clients and
	// load balancers commonly time requests out after about a minute.
	MaxInProgressWait = time.Minute
	// DefaultMaxWaiters is the number of requests an instance holds
	// waiting on one endpoint's operations in flight when
	// InProgress.MaxWaiters is unset. A waiter holds no database
	// connection (one shared poll per operation), only a goroutine and a
	// client connection, so a thousand cost a few megabytes.
	DefaultMaxWaiters = 1000
)

// InProgress says what a retry that finds its operation still running
// gets.
type InProgress struct {
	// Wait is how long such a retry waits for the run in flight to finish
	// before it is answered: with the run's recorded answer as a replay
	// if it finished in time, else 409 with Retry-After as without a wait.
	// The wait holds no database connection and no lock, and ends when
	// the client goes away. Default 0: 409 at once. At most
	// MaxInProgressWait; synchronous endpoints only (an async retry is
	// answered 202 at once; GET /v1/operations/{id}?wait= waits there).
	Wait time.Duration `yaml:"wait"`
	// MaxWaiters bounds the requests one instance holds waiting on this
	// endpoint; one more gets the 409 at once. Default DefaultMaxWaiters.
	MaxWaiters int `yaml:"max_waiters"`
}

// MaxWaitersOrDefault returns MaxWaiters, or DefaultMaxWaiters when it is
// unset.
func (w InProgress) MaxWaitersOrDefault() int {
	if w.MaxWaiters == 0 {
		return DefaultMaxWaiters
	}
	return w.MaxWaiters
}

// checkInProgress validates an endpoint's in_progress settings, reported
// under at.
func (e Endpoint) checkInProgress(p *problems, at string) {
	w := e.InProgress
	at += ".in_progress"
	switch {
	case w.Wait < 0:
		p.add(at+".wait", "must be 0 (answer 409 at once) or positive, got %s", w.Wait)
	case w.Wait > MaxInProgressWait:
		p.add(at+".wait", "%s is longer than %s; a held request costs a client connection, and clients time out", w.Wait, MaxInProgressWait)
	case w.Wait > 0 && e.Async:
		p.add(at+".wait", "only for synchronous endpoints: an async retry is answered 202 at once (wait on GET /v1/operations/{id}?wait= instead)")
	}
	if w.MaxWaiters < 0 {
		p.add(at+".max_waiters", "must be positive, got %d", w.MaxWaiters)
	}
}
