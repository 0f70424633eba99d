package crdb

import "strings"

// Statements exported for the benchmarks' raw baselines, so the raw side
// runs exactly the SQL the store runs.
var (
	ClaimSQL  = claimSQL
	FinishSQL = strings.ReplaceAll(strings.NewReplacer("{set}", finishSet,
		"{cond}", `state IN ('PENDING', 'IN_PROGRESS')`).Replace(updateSQL), "{now}", "COALESCE($1::TIMESTAMPTZ, now())")
	RecordCols = recordCols
)

// PinClaimFirst keeps every endpoint on the claim-first path, so a
// benchmark can measure it alone.
func (s *Store) PinClaimFirst() {
	s.retries.mu.Lock()
	s.retries.pinned = true
	s.retries.mu.Unlock()
}

// ReadFirst reports whether an endpoint is on the read-first path.
func (s *Store) ReadFirst(endpoint string) bool { return s.retries.readFirst(endpoint) }
