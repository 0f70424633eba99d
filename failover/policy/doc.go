// Package policy is the failover policy vocabulary: the policies an
// endpoint may name in its `failover` field, the actions a gateway takes
// for a shard whose owner region is lost, each action's client answer,
// and the table that picks the action. It is a leaf (standard library
// only), so the configuration and the drills' scenarios validate a policy
// without linking etcd or the failover controller.
//
// A new policy is one row in policies (its action in each Situation); a
// new action is one row in actions (its name and its answer) plus its
// constant.
package policy
