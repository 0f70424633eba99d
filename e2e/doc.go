// Package e2e holds the end-to-end tests of idemcoord: each test starts
// (or shares) a local three-region dev cluster — embedded etcd, a
// throwaway PostgreSQL, the demo payments service and bank, three idemd
// gateways — and talks to it over real HTTP on loopback, checking the
// HTTP contract (docs/http-contract.md) and the invariants of
// docs/architecture.md against what the bank and the payments table
// actually recorded.
//
// The package has no non-test code besides this file. Run it with
//
//	go test -race -count=1 ./e2e
//
// Set IDEMCOORD_E2E_LOG=debug (or info, warn, error) to see the clusters'
// logs on stderr.
package e2e
