// Package bank is the demo downstream ledger that the payments service
// charges. It records every charge it accepts, with no uniqueness on the
// operation id: a duplicate charge is a second row, visible to Count and to
// GET /charges, which is exactly what the chaos drills count.
//
// Routes:
//
//	POST /charges                   record a charge, 201 {"charge_id"}
//	GET  /charges?operation_id=X    200 {"charged", "charges"}
//	GET  /faults, PUT /faults       read or replace the fault knobs
//
// The fault knobs (Faults) make the bank slow, failing or hanging so a drill
// can produce every outcome the payments service must survive, including
// "charged, but the answer never arrived" (DelayAfter).
package bank
