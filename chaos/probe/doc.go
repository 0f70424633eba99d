// Package probe holds the drill's own probes of the SQL store: deliberate
// writes that must be refused or must collide, whose outcome the drill
// records in its history. They let the checker count coverage (a
// stale-epoch write rejected, a 40001 retried) from what the drill
// observed itself, never from the coordinator's counters.
package probe
