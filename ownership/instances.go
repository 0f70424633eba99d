package ownership

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Instance is one registered instance, as its liveness key shows it.
type Instance struct {
	// Region and Name identify the instance.
	Region, Name string
	// Since is when it registered (RFC 3339, its own clock).
	Since string
	// CreateRevision identifies this registration: a re-registered
	// instance has a new one.
	CreateRevision int64
	// Lease is the lease the key is attached to.
	Lease clientv3.LeaseID
}

// Instances returns the registered instances of region ("" for every
// region), sorted by region and name, with one linearizable read. A key
// is present until its lease expires, so an instance that just died may
// still be listed for up to its TTL.
func Instances(ctx context.Context, cli *clientv3.Client, prefix, region string) ([]Instance, error) {
	p := livenessPrefix(prefix)
	if region != "" {
		p += region + "/"
	}
	resp, err := cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("ownership: list instances: %w", err)
	}
	return instancesOf(prefix, resp.Kvs), nil
}

// instancesOf decodes liveness keys, sorted by region and name.
func instancesOf(prefix string, kvs []*mvccpb.KeyValue) []Instance {
	var out []Instance
	for _, kv := range kvs {
		r, name, ok := strings.Cut(strings.TrimPrefix(string(kv.Key), livenessPrefix(prefix)), "/")
		if !ok {
			continue
		}
		out = append(out, Instance{Region: r, Name: name, Since: string(kv.Value),
			CreateRevision: kv.CreateRevision, Lease: clientv3.LeaseID(kv.Lease)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Region != out[j].Region {
			return out[i].Region < out[j].Region
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// LiveRegions returns the regions with at least one registered instance,
// sorted.
func LiveRegions(ctx context.Context, cli *clientv3.Client, prefix string) ([]string, error) {
	all, err := Instances(ctx, cli, prefix, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range all {
		if len(out) == 0 || out[len(out)-1] != in.Region {
			out = append(out, in.Region)
		}
	}
	return out, nil
}
