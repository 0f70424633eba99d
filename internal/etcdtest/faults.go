package etcdtest

import (
	"context"
	"sync/atomic"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

// Fault is what TxnFaults does to one transaction.
type Fault int

// Faults of one transaction.
const (
	// Pass runs the transaction.
	Pass Fault = iota
	// LostBefore answers "etcdserver: request timed out" without sending
	// the transaction: nothing was applied.
	LostBefore
	// LostAfter runs the transaction and then answers "etcdserver:
	// request timed out": it was applied, and the caller cannot tell.
	LostAfter
)

// TxnFaults is a dial option that makes the client's transactions time
// out as a busy etcd's do: fault(n) decides for its nth transaction
// (counted from 1 in n, which the caller may read). Other calls pass.
func TxnFaults(n *atomic.Int64, fault func(n int64) Fault) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if method != "/etcdserverpb.KV/Txn" {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		switch fault(n.Add(1)) {
		case LostBefore:
			return rpctypes.ErrGRPCTimeout
		case LostAfter:
			if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
				return err
			}
			return rpctypes.ErrGRPCTimeout
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
}
