// Package downstream guards the downstream provider's own idempotency-key
// window. A provider behind the upstream deduplicates its keys only for a
// while (Stripe's v1 API prunes them after 24 hours), so an attempt
// idemcoord sends again after that window (a retry's takeover, the re-run
// of an unknown outcome its resolve path settled as not run, an async
// recovery, an on_retry: complete resume) may become a second effect at
// the provider even though idemcoord ran the intent once. An endpoint
// with a downstream_window names that window; past it nothing is sent
// again automatically and the operation waits for an operator (idemctl op
// get, then idemctl op reconcile; docs/runbook.md).
//
// It is a leaf (standard library only): the store decides with it on its
// own clock, the configuration validates with its rule.
package downstream
