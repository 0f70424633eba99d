package ownership

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
)

// CallCounter counts the gRPC calls an etcd client makes: unary calls
// (Range, Txn, Put, LeaseGrant, ...) and streams opened (Watch,
// LeaseKeepAlive). Messages on an already open stream are not calls. Put
// its DialOptions in clientv3.Config.DialOptions; a test then proves that
// a path makes no etcd call at all.
type CallCounter struct {
	unary   atomic.Int64
	streams atomic.Int64
}

// DialOptions returns the interceptors that count.
func (c *CallCounter) DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
			cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			c.unary.Add(1)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn,
			method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			c.streams.Add(1)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
}

// Calls returns the number of unary calls plus streams opened so far.
func (c *CallCounter) Calls() int64 { return c.unary.Load() + c.streams.Load() }
