// Package failover decides what happens to a region's shards when the
// region is lost, and carries out the operator's planned moves.
//
// Three parts:
//
//   - Policy (reject or transfer) is an endpoint's failover policy, and
//     Decide says what a gateway does with a request given the policy, the
//     shard's ownership state and the owner region's liveness state.
//   - Tracker derives each region's liveness state (healthy, suspect,
//     failed, recovering) from its instances' liveness keys in etcd
//     (ownership.Instances), compared by create revision, with timing on
//     an injected clock.
//   - Controller is the single elected failover controller: it campaigns
//     through an etcd election and, while it leads, moves every shard of a
//     failed region to its failover region in state FAILED_OVER. Every
//     etcd write it makes carries its election key's create revision as a
//     guard, so a deposed controller writes nothing.
//
// Repair holds the operator's moves (Failover, Failback, Drain, Accept),
// each audited; idemctl calls them.
package failover
