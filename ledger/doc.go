// Package ledger is the incident ledger: after a region failover, a
// failback, a drain, a forced accept or a shard move, which business
// intents the incident touched and how each ended, for finance and
// support to reconcile without reading logs (docs/runbook.md, "After an
// incident: reconcile with the ledger").
//
// An incident and its time window come from the repair audit (Incidents):
// the audited fence moves and the region-level rows of the controller and
// of idemctl, and the store outage windows each gateway instance audits
// once its store answers again (Notes.Watch, outage.go). What happened to
// each intent comes from its record, as it is now, and from the incident
// events the coordinator writes where the record keeps nothing: a request
// held or refused while its shard was between owners, or refused while
// the store was down (Notes, called by the gateway; nothing ran, so there
// may be no record), and the state a record was in when the region that
// took its shard over first wrote it (the SQL store, on a takeover or a
// resolve across epochs). Classify turns one of those into an Entry: its
// Class, what the coordinator did, its final state and whether a person
// must act. Report streams a window's entries to a table, JSON or CSV with
// a summary per class, in bounded memory: the store is read in keyset pages
// and nothing is kept but the counts.
package ledger
