package config

// UpstreamDedup says what an endpoint's upstream deduplicates executions
// by.
type UpstreamDedup string

// Upstream deduplication modes.
const (
	// UpstreamDedupNone promises nothing: a second execution of one
	// operation id may take effect twice. The default. An operation that
	// was in flight in a region that lost the actor's shard is taken over
	// only after its lease, by which time the old region's upstream call
	// has ended (the lease outlasts upstream_timeout).
	UpstreamDedupNone UpstreamDedup = "none"
	// UpstreamDedupOperationID promises that the upstream takes effect
	// at most once per X-Idempotency-Operation-Id, however many times
	// and from wherever it is called (a unique constraint on the
	// operation id, written before any external effect, as the demo
	// payments service does), and answers a repeat with the first
	// execution's outcome or an answer the gateway retries. It needs
	// resolve_path.
	//
	// With it, the new owner of a moved shard does not wait out the lease
	// of an operation the old owner left in flight: the fence already
	// refuses the old owner's every write, and a call the old owner may
	// still have on the wire lands on the upstream's dedup. The new
	// owner's retry, or its recovery right after the move, takes the
	// operation over at once, asks the resolve path, and runs it again
	// (same operation id) only if the upstream says it never ran.
	// Declare it only if it is true: a double effect is what it costs
	// otherwise.
	UpstreamDedupOperationID UpstreamDedup = "operation_id"
)

// TakesOverFenced reports whether the endpoint's operations left in
// flight by a region that lost their shard are taken over at once rather
// than after their lease: its upstream deduplicates by operation id and
// it has a resolve path (see UpstreamDedupOperationID).
func (e Endpoint) TakesOverFenced() bool {
	return e.UpstreamDedup == UpstreamDedupOperationID && e.ResolvePath != ""
}

// checkDedup validates an endpoint's upstream_dedup, reported under at.
func (e Endpoint) checkDedup(p *problems, at string) {
	at += ".upstream_dedup"
	switch e.UpstreamDedup {
	case "", UpstreamDedupNone:
	case UpstreamDedupOperationID:
		if e.ResolvePath == "" {
			p.add(at, "%q needs resolve_path: a takeover asks the upstream whether the operation ran before it runs it again",
				UpstreamDedupOperationID)
		}
	default:
		p.add(at, "must be %q or %q, got %q", UpstreamDedupNone, UpstreamDedupOperationID, e.UpstreamDedup)
	}
}
