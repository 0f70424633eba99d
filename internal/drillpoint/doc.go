// Package drillpoint holds the coordinator's drill-only hooks: the crash
// points of the request path and the skewable clock the chaos drills
// (package chaos) move.
//
// The crash points exist only in the drill build of idemd
// (go build -tags drill ./cmd/idemd). Without the tag Hit is an empty
// function and Enabled is false, so every call site compiles to nothing.
// With the tag an armed point kills its own process with SIGKILL when a
// request reaches it, exactly like kill -9: no deferred code runs, no
// answer is written, no shutdown happens.
//
// The points, in the order a request reaches them:
//
//	after_claim     the claim is committed, the upstream not yet called
//	after_upstream  the upstream answered, the result not yet recorded
//	before_finish   just before the finish statement starts
//	during_commit   the finish committed in the store, its reply not acted on
//
// See docs/drills.md ("The drill build") and DRILLAPI.md for the control
// API that arms them.
package drillpoint
