package testutil

import (
	"errors"
	"testing"
	"time"
)

// pollEvery is how often Eventually checks its condition.
const pollEvery = 20 * time.Millisecond

// Eventually calls cond until it returns nil or timeout passes, then
// fails the test with cond's last error. It is for a real condition that
// changes on its own (a process printed its address, a watch delivered
// an event), never for waiting out a lease or a TTL: a test moves the
// injected clock or the database's time instead.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	EventuallyEvery(t, timeout, pollEvery, cond)
}

// EventuallyEvery is Eventually checking cond every interval, for a check
// that costs something (a request that creates a payment, a scrape).
func EventuallyEvery(t testing.TB, timeout, every time.Duration, cond func() error) {
	t.Helper()
	if err := PollEvery(timeout, every, cond); err != nil {
		t.Fatalf("not within %v: %v", timeout, err)
	}
}

// errNotYet is Poll's error for a condition that reported false.
var errNotYet = errors.New("condition not met")

// Cond adapts a boolean condition to Eventually.
func Cond(ok func() bool) func() error {
	return func() error {
		if ok() {
			return nil
		}
		return errNotYet
	}
}

// Poll is Eventually without a test: cond's last error, or nil once it
// held. Use it where the caller decides what a timeout means.
func Poll(timeout time.Duration, cond func() error) error { return PollEvery(timeout, pollEvery, cond) }

// PollEvery is Poll checking cond every interval.
func PollEvery(timeout, every time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(every)
	}
}
