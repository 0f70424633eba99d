// Package traffic is the drill's workload: many actors, each sending
// business intents (payments) through the Go SDK with one idempotency key
// reused across every retry of an intent, a share of the retries sent to
// another region, and a share of intents that reuse their key with a
// changed body after their success (which must get 422). It is seeded
// (math/rand/v2) and bounded in count and in time, and it records every
// attempt in a history.Recorder with its call and return times and its
// answer.
//
// Every attempt is one SDK call with MaxAttempts 1: the traffic, not the
// SDK, decides where a retry goes, so that each attempt is recorded with
// the region it was sent to.
package traffic
