// Package payments is the demo business API that runs behind the idemcoord
// gateway and charges the demo bank (package bank).
//
// Routes:
//
//	POST /v1/payments                      create and charge a payment
//	POST /v1/transfers                     the same, under its own route (its own endpoint policy)
//	POST /v1/held-payments                 the same, held (reserved) for Options.Hold first
//	GET  /v1/payments                      the calling actor's payments, newest first
//	GET  /v1/payments/{id}                 one of the calling actor's payments
//	GET  /internal/operations/{operation_id}  the gateway's resolve URL
//	POST /internal/operations/{operation_id}/cancel  the gateway's cancel URL
//
// Every execution first passes a gate (hold.go): the operation is
// reserved (stage "reserved", reversible), then captured ("captured",
// irreversible: one conditional update on its payment_stages row) before
// the steps below; a cancel that wins the row first ("cancelled") stops
// it there, and nothing is ever charged. A held payment stays reserved for
// Options.Hold and reports its stages to the gateway in 102 answers
// (X-Idempotency-Stage); POST /v1/payments captures at once.
//
// The gateway sets X-Idempotency-Operation-Id and X-Idempotency-Actor on
// every request. A payment is executed in three steps, each its own
// transaction, and never inside one:
//
//  1. INSERT the payment as 'pending'. payments.operation_id is UNIQUE: it
//     is the last line of defence against a double charge when the gateway
//     runs an operation twice (a takeover, a failover).
//  2. POST the charge to the bank with the operation id.
//  3. Mark the payment 'succeeded' (or 'failed') with an update conditioned
//     on its current status, so two executions never both act.
//
// Because the row exists before the bank is called, a late original can
// never charge after the gateway re-ran the operation: the re-run either
// finds the row or its insert wins and the original's insert fails.
//
// What the bank answered decides the status:
//
//	201                                  succeeded, 201
//	any other status (bank: "not recorded") failed, 502
//	connection refused / dial failure    failed, 502 (the request never left)
//	timeout, reset after sending         stays pending, 504 (outcome unknown)
//
// A second execution of the same operation (the insert hits the unique
// constraint) reads the row instead of charging: succeeded answers the same
// 201; pending asks the bank "was it charged?" and settles the row to
// succeeded if so, else answers 409; failed claims the row back to pending
// (conditional update, one winner), asks the bank, and charges again only if
// the bank has no charge for the operation. The same operation id sent with
// another actor or another amount, currency or reference is 422.
//
// Execution is detached from the caller's context once the request is
// validated: a gateway that gives up does not leave a half-done payment
// behind, and the resolve endpoint sees the final status.
//
// A payment left 'pending' whose bank call never went out answers 409
// until it is settled: taking it over after a timeout would gamble on a
// charge that may still land. When the process knows nothing of it can be
// charged (the bank answered "not recorded", or was never called because
// the insert's outcome was lost) but the database failed before the row
// could be marked 'failed', it releases the row in the background as soon
// as the database answers (release.go). When the process died between
// steps 1 and 2, an operator settles it.
package payments
