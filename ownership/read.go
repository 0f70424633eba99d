package ownership

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ShardCount returns the shard count the directory was bootstrapped with,
// or ErrNotBootstrapped.
func (d *Directory) ShardCount(ctx context.Context) (int, error) {
	resp, err := d.cli.Get(ctx, countKey(d.prefix))
	if err != nil {
		return 0, fmt.Errorf("ownership: read shard count: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, fmt.Errorf("ownership: directory has no shard count: %w", ErrNotBootstrapped)
	}
	return parseCount(resp.Kvs[0].Value)
}

func parseCount(v []byte) (int, error) {
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: shard count %q", ErrCorrupt, v)
	}
	return n, nil
}

// CheckShardCount returns *ShardCountError unless the directory was
// bootstrapped with exactly configured shards. A daemon calls it before
// serving.
func (d *Directory) CheckShardCount(ctx context.Context, configured int) error {
	n, err := d.ShardCount(ctx)
	if err != nil {
		return err
	}
	if n != configured {
		return &ShardCountError{Configured: configured, Stored: n}
	}
	return nil
}

// Get reads one shard's entry with a linearizable read. It returns
// ErrNotBootstrapped when the shard has no entry.
func (d *Directory) Get(ctx context.Context, shard int) (Entry, error) {
	resp, err := d.cli.Get(ctx, shardKey(d.prefix, shard))
	if err != nil {
		return Entry{}, fmt.Errorf("ownership: read shard %d: %w", shard, err)
	}
	if len(resp.Kvs) == 0 {
		return Entry{}, fmt.Errorf("ownership: directory: shard %d has no entry: %w", shard, ErrNotBootstrapped)
	}
	kv := resp.Kvs[0]
	return decodeEntry(shard, kv.Value, kv.ModRevision)
}

// List reads every shard's entry, in shard order, with one linearizable
// range read, and returns the revision it read at.
func (d *Directory) List(ctx context.Context) ([]Entry, int64, error) {
	return list(ctx, d.cli, d.prefix)
}

func list(ctx context.Context, kv clientv3.KV, prefix string) ([]Entry, int64, error) {
	resp, err := kv.Get(ctx, shardsPrefix(prefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, 0, fmt.Errorf("ownership: list shards: %w", err)
	}
	out := make([]Entry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		shard, ok := shardOfKey(prefix, kv.Key)
		if !ok {
			continue
		}
		e, err := decodeEntry(shard, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, e)
	}
	return out, resp.Header.Revision, nil
}
