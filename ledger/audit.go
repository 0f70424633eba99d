package ledger

import (
	"context"
	"time"

	"github.com/idemcoord/idemcoord/store"
)

// auditPage is how many audit rows one read takes.
const auditPage = 5000

// FromAudit reads the audit rows incidents are made of (AuditActions)
// since since, a page at a time, and derives the incidents (Incidents).
func FromAudit(ctx context.Context, a store.Auditor, since, now time.Time) ([]Incident, error) {
	var rows []store.AuditRow
	for _, action := range AuditActions {
		for off := 0; ; off += auditPage {
			page, err := a.QueryAudit(ctx, store.AuditFilter{Since: since, Action: action, Limit: auditPage, Offset: off})
			if err != nil {
				return nil, err
			}
			rows = append(rows, page...)
			if len(page) < auditPage {
				break
			}
		}
	}
	return Incidents(rows, now), nil
}
