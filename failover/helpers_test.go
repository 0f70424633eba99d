package failover_test

import clientv3 "go.etcd.io/etcd/client/v3"

func clientv3WithPrefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }

func leaseOf(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }
