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
