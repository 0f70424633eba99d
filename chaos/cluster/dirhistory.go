package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/idemcoord/idemcoord/chaos/validate"
	"github.com/idemcoord/idemcoord/ownership"
)

var _ DirectoryHistory = (*Regional)(nil)

// historyReaders bounds the concurrent reads of ReadDirectoryHistory.
const historyReaders = 8

// historyDial bounds the dial of the checker's own etcd client.
const historyDial = 5 * time.Second

// ReadDirectoryHistory reads, for every shard key under the directory's
// prefix, each revision etcd still holds, oldest first: the current value
// and, walking back, the value at each earlier mod revision (a Get at
// revision mod-1 returns the version before). A key whose older revisions
// were compacted is returned with what is left and Complete false.
func ReadDirectoryHistory(ctx context.Context, kv clientv3.KV, prefix string) (map[int]validate.ShardHistory, error) {
	shards := prefix + "shards/"
	resp, err := kv.Get(ctx, shards, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cluster: directory history: %w", err)
	}
	var (
		mu   sync.Mutex
		out  = make(map[int]validate.ShardHistory, len(resp.Kvs))
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, historyReaders)
	)
	for _, cur := range resp.Kvs {
		shard, err := strconv.Atoi(strings.TrimPrefix(string(cur.Key), shards))
		if err != nil {
			continue // not a shard key
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			h, err := keyHistory(ctx, kv, cur)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("cluster: directory history of shard %d: %w", shard, err))
				return
			}
			out[shard] = h
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// keyHistory walks one key back from cur, to its creation or to what
// compaction left.
func keyHistory(ctx context.Context, kv clientv3.KV, cur *mvccpb.KeyValue) (validate.ShardHistory, error) {
	var h validate.ShardHistory
	for {
		r, err := revision(cur)
		if err != nil {
			return h, err
		}
		h.Revisions = append(h.Revisions, r)
		if cur.Version <= 1 {
			h.Complete = true
			break
		}
		resp, err := kv.Get(ctx, string(cur.Key), clientv3.WithRev(cur.ModRevision-1))
		if errors.Is(err, rpctypes.ErrCompacted) {
			break
		}
		if err != nil {
			return h, err
		}
		if len(resp.Kvs) == 0 {
			break // deleted and created again: the older life is not this key's
		}
		cur = resp.Kvs[0]
	}
	for i, j := 0, len(h.Revisions)-1; i < j; i, j = i+1, j-1 {
		h.Revisions[i], h.Revisions[j] = h.Revisions[j], h.Revisions[i]
	}
	return h, nil
}

// revision decodes one stored shard value.
func revision(kv *mvccpb.KeyValue) (validate.DirectoryRevision, error) {
	var e ownership.Entry
	if err := json.Unmarshal(kv.Value, &e); err != nil {
		return validate.DirectoryRevision{}, fmt.Errorf("revision %d: %w", kv.ModRevision, err)
	}
	r := validate.DirectoryRevision{Revision: kv.ModRevision,
		DirectoryEntry: validate.DirectoryEntry{Owner: e.Owner, Epoch: e.Epoch, State: string(e.State)}}
	if t := e.Transfer; t != nil {
		r.FromOwner, r.FromEpoch, r.FromState, r.Final = t.FromOwner, t.FromEpoch, string(t.FromState), string(t.Final)
	}
	return r, nil
}

// DirectoryHistory implements DirectoryHistory: it reads the directory's
// revisions through a client of its own to every etcd member.
func (r *Regional) DirectoryHistory(ctx context.Context) (map[int]validate.ShardHistory, error) {
	prefix := ""
	for _, g := range r.c.Regions {
		if g.Daemon != nil {
			prefix = g.Daemon.Directory().Prefix()
			break
		}
	}
	if prefix == "" {
		return nil, errNoRegionRunning
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: r.c.Etcd.Endpoints(), DialTimeout: historyDial})
	if err != nil {
		return nil, fmt.Errorf("cluster: directory history: %w", err)
	}
	defer cli.Close()
	return ReadDirectoryHistory(ctx, cli, prefix)
}
