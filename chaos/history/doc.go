// Package history records what a drill did and saw: every request with its
// call and return times (monotonic, relative to the start of the run), who
// sent it, where it went, who served it and what came back, plus the
// drill's own probe events and fault windows. It is the only input the
// checker (package chaos/validate) takes from the drill's clients, and it
// persists as JSON lines so a run can be checked again later.
//
// Like etcd's tests/robustness, a request whose answer was lost is recorded
// as such (an error class), never guessed: the checker treats it as "may
// have happened".
package history
