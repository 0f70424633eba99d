package policy

import (
	"fmt"
	"time"
)

// Action is what a gateway does with a request for a shard; every action
// but Serve answers the client itself, with its Answer.
type Action int

// Actions, from Policy.In.
const (
	// Serve: route to the owner as usual.
	Serve Action = iota
	// Wait: answer 503 + Retry-After and execute nothing; the situation
	// resolves by itself (the owner is only suspect, or a transfer is
	// under way), so the gateway's move hold may wait it out first.
	Wait
	// Refuse: answer 503 + Retry-After with problem type region-failover
	// naming the shard's state; an operator must fail back or accept.
	Refuse
)

// Answer is the client answer of an action that does not serve: a
// problem document (RFC 9457) with status 503 and Retry-After.
type Answer struct {
	// Result is the request metric's result label.
	Result string
	// Problem is the problem type (the last segment of its URI).
	Problem string
	// Title is the problem's title.
	Title string
	// Detail is the problem's detail, a fmt format over the shard (%[1]d),
	// its state (%[2]s), its owner region (%[3]q) and the owner's liveness
	// (%[4]s).
	Detail string
	// RetryAfter is the Retry-After the answer carries (whole seconds on
	// the wire).
	RetryAfter time.Duration
	// Hold reports whether the gateway's move hold applies: the situation
	// clears by itself within a drain, so a gateway may wait for the
	// ownership cache to change before answering.
	Hold bool
}

// Retry-After values of the answers.
const (
	// RefuseRetryAfter is the Retry-After while a shard is refused by the
	// reject policy: a failback or an operator's accept takes a while, and
	// a client retrying every few seconds costs nothing.
	RefuseRetryAfter = 2 * time.Second
	// WaitRetryAfter is the Retry-After while the owner region is suspect
	// or failed and its shards not moved yet: the failover completes
	// within a second or two of that (the confirmation delay, 500 ms by
	// default, then the moves), so a client told to come back in a second
	// lands right after it, not a second late (Retry-After is whole
	// seconds: one is the least it can say).
	WaitRetryAfter = time.Second
)

// actions lists every action with its name and its answer (none for
// Serve, which the owner answers).
var actions = [...]struct {
	name   string
	answer *Answer
}{
	Serve: {name: "serve"},
	Wait: {name: "wait", answer: &Answer{Result: "region_suspect", Problem: "region-failover",
		Title:      "the actor's owner region is not answering; waiting for it to come back or fail over",
		Detail:     "shard %[1]d: owner %[3]q is %[4]s; nothing was executed; retry with the same key",
		RetryAfter: WaitRetryAfter, Hold: true}},
	Refuse: {name: "refuse", answer: &Answer{Result: "region_failover", Problem: "region-failover",
		Title:      "the actor's region failed over; this endpoint rejects writes until failback or an operator accepts the new owner",
		Detail:     "shard %[1]d is %[2]s (now owned by %[3]q); nothing was executed; retry with the same key later",
		RetryAfter: RefuseRetryAfter}},
}

// Answer returns a's client answer; ok is false for Serve (and an unknown
// action), which the gateway does not answer itself.
func (a Action) Answer() (ans Answer, ok bool) {
	if a < 0 || int(a) >= len(actions) || actions[a].answer == nil {
		return Answer{}, false
	}
	return *actions[a].answer, true
}

// Holds reports whether a's answer lets the move hold wait the situation
// out (Answer.Hold).
func (a Action) Holds() bool {
	ans, ok := a.Answer()
	return ok && ans.Hold
}

// String names the action.
func (a Action) String() string {
	if a >= 0 && int(a) < len(actions) {
		return actions[a].name
	}
	return fmt.Sprintf("action(%d)", int(a))
}

// DetailFor formats the answer's detail for a shard in state, owned by
// owner whose liveness is health.
func (ans Answer) DetailFor(shard int, state, owner, health string) string {
	return fmt.Sprintf(ans.Detail, shard, state, owner, health)
}
