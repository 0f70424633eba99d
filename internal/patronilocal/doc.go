// Package patronilocal runs a real Patroni-managed PostgreSQL cluster on
// the loopback interface, for tests, drills and the local dev cluster: one
// patroni daemon per member (as the postgres user, with a clean
// environment), etcd as the DCS (Patroni's etcd3 backend), synchronous
// replication (strict by default: with no synchronous standby commits wait
// instead of going asynchronous), pg_rewind for a returning old primary.
//
// It needs Patroni 4 (Debian trixie's 4.0.7) and refuses older versions:
// Debian bookworm's 3.0.2 overwrites the leader key unconditionally
// (patroni/patroni#2689) and can discard a promoted primary's history.
//
// Faults act on real processes: Kill is a SIGKILL of Patroni and of every
// PostgreSQL process of the member, Pause and Resume freeze and wake them
// (SIGSTOP/SIGCONT), Restart starts a killed member, which rejoins through
// pg_rewind, and Switchover is Patroni's planned handover.
package patronilocal
