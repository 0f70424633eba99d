package patronistore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/shard"
	"github.com/idemcoord/idemcoord/sqlstore"
	"github.com/idemcoord/idemcoord/store"
	"github.com/idemcoord/idemcoord/store/backend"
)

// The store is the registry's "patroni" backend.
func init() { backend.Register(config.PatroniStoreBackend, OpenBackend) }

// Store routes every call about one shard to the cluster that holds it,
// and fans out the rest. It is safe for concurrent use.
type Store struct {
	clusters []Cluster
	// route is the index in clusters of each shard's cluster, from the
	// configuration; moved overrides it for the shards MoveShards moved
	// (copy on write).
	route func(shard int) int
	moved atomic.Pointer[map[int]int]
	// count is the deployment's shard count, which actors hash by.
	count int
	// audit is the index of the cluster that keeps the audit rows not
	// about one shard.
	audit int
	// next rotates the cluster a Cleanup starts with.
	next nextCounter
	// routeMu serializes reroutes.
	routeMu sync.Mutex
}

var _ store.Backend = (*Store)(nil)

// Cluster is one cluster of a Store.
type Cluster struct {
	// Name names the cluster in errors and logs.
	Name string
	// Store is the SQL store on the cluster's primary.
	Store *sqlstore.Store
}

// New returns a Store over clusters, where route(shard) is the index in
// clusters of each of the shards shards' cluster, and audit the index of
// the cluster that keeps the audit rows not about one shard. The Store
// closes the clusters' stores on Close.
func New(clusters []Cluster, shards int, route func(shard int) int, audit int) (*Store, error) {
	if len(clusters) == 0 {
		return nil, errors.New("patronistore: no clusters")
	}
	if shards < 1 {
		return nil, fmt.Errorf("patronistore: shard count must be at least 1, got %d", shards)
	}
	if audit < 0 || audit >= len(clusters) {
		return nil, fmt.Errorf("patronistore: audit cluster %d is not one of %d", audit, len(clusters))
	}
	for n := range shards {
		if i := route(n); i < 0 || i >= len(clusters) {
			return nil, fmt.Errorf("patronistore: shard %d has no cluster", n)
		}
	}
	s := &Store{clusters: clusters, audit: audit, route: route, count: shards}
	s.moved.Store(&map[int]int{})
	return s, nil
}

// Routes returns the index of the cluster of each shard, from cfg: a
// shard named by a cluster's explicit ranges (and homed in its regions,
// when it lists any) goes there; else to the
// cluster that lists its home region (or is named like it, when it lists
// neither regions nor shards). config.Validate has checked that every
// shard has one.
func Routes(cfg *config.PatroniStore, shards int, home func(int) string) (func(int) int, error) {
	byRange := map[int]int{}
	byRegion := map[string]int{}
	for i, c := range cfg.Clusters {
		if len(c.Shards) == 0 {
			for _, r := range c.Regions {
				byRegion[r] = i
			}
		}
		for _, raw := range c.Shards {
			r, err := config.ParseShardRange(raw)
			if err != nil {
				return nil, fmt.Errorf("store.patroni.clusters[%d].shards: %w", i, err)
			}
			for n := r.First; n <= min(r.Last, shards-1); n++ {
				// With regions, only the range's shards homed there.
				if len(c.Regions) == 0 || slices.Contains(c.Regions, home(n)) {
					byRange[n] = i
				}
			}
		}
	}
	for i, c := range cfg.Clusters {
		if _, taken := byRegion[c.Name]; len(c.Regions) == 0 && len(c.Shards) == 0 && !taken {
			byRegion[c.Name] = i
		}
	}
	var missing []int
	for n := range shards {
		if _, ok := byRange[n]; ok {
			continue
		}
		if _, ok := byRegion[home(n)]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("store.patroni.clusters: %d shards have no cluster (first: shard %d, home %q)", len(missing), missing[0], home(missing[0]))
	}
	return func(n int) int {
		if i, ok := byRange[n]; ok {
			return i
		}
		return byRegion[home(n)]
	}, nil
}

// OpenBackend is the "patroni" backend's Opener: one sqlstore.Store per
// cluster on its DSN (reachability checked within
// store.connect_timeout, naming the cluster), routed by Routes.
func OpenBackend(ctx context.Context, o backend.Options) (store.Backend, error) {
	cfg := &o.Store.Patroni
	if len(cfg.Clusters) == 0 {
		return nil, errors.New("store.patroni: required with store.backend: patroni")
	}
	home := o.Home
	if home == nil {
		return nil, errors.New("patronistore: the shards' home regions are required (backend.Options.Home)")
	}
	route, err := Routes(cfg, o.Shards, home)
	if err != nil {
		return nil, err
	}
	audit := 0
	clusters := make([]Cluster, 0, len(cfg.Clusters))
	closeAll := func() {
		for _, c := range clusters {
			c.Store.Close()
		}
	}
	for i, c := range cfg.Clusters {
		if c.Name == cfg.AuditCluster {
			audit = i
		}
		s, err := sqlstore.OpenDSN(ctx, o, c.DSN)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("store.patroni.clusters[%d] (%s): %w", i, c.Name, err)
		}
		clusters = append(clusters, Cluster{Name: c.Name, Store: s})
	}
	s, err := New(clusters, o.Shards, route, audit)
	if err != nil {
		closeAll()
		return nil, err
	}
	return s, nil
}

// Clusters returns the store's clusters, in configuration order.
func (s *Store) Clusters() []Cluster { return s.clusters }

// ClusterOf returns the index of shard's cluster.
func (s *Store) ClusterOf(shard int) int {
	if i, ok := (*s.moved.Load())[shard]; ok {
		return i
	}
	if i := s.route(shard); i >= 0 && i < len(s.clusters) {
		return i
	}
	return s.audit // a shard out of the map: its fence there admits nobody
}

// reroute routes shards to cluster to.
func (s *Store) reroute(shards []int, to int) {
	s.routeMu.Lock()
	defer s.routeMu.Unlock()
	m := maps.Clone(*s.moved.Load())
	for _, n := range shards {
		m[n] = to
	}
	s.moved.Store(&m)
}

// of returns the cluster store of shard.
func (s *Store) of(shard int) *sqlstore.Store { return s.clusters[s.ClusterOf(shard)].Store }

// ofActor returns the cluster store of actor's shard.
func (s *Store) ofActor(actor string) *sqlstore.Store { return s.of(shard.Of(actor, s.count)) }

// each runs fn on every cluster at once and returns their errors joined,
// each naming its cluster.
func (s *Store) each(ctx context.Context, fn func(ctx context.Context, i int, c clusterStore) error) error {
	errs := make([]error, len(s.clusters))
	var wg sync.WaitGroup
	for i, c := range s.clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, i, c.Store); err != nil {
				errs[i] = &ClusterError{Cluster: c.Name, Err: err}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ClusterError is a fanned-out call's failure on one cluster. It
// unwraps to the cluster's error (so errors.Is(err, store.ErrUnavailable)
// still tells an outage).
type ClusterError struct {
	Cluster string
	Err     error
}

func (e *ClusterError) Error() string {
	return "patronistore: cluster " + e.Cluster + ": " + e.Err.Error()
}

func (e *ClusterError) Unwrap() error { return e.Err }

// Ping is readiness: ready while at least one cluster answers. A cluster
// that is down makes its own shards' calls fail (503 + Retry-After at the
// gateway) but must not take the instance out of rotation, which would
// stop the shards of every other cluster too. Health says which cluster
// is down.
//
// Ping answers as soon as one cluster does, and stops asking the others:
// a cluster whose primary is frozen (paused, partitioned, failing over)
// holds its ping until the call's deadline, and a readiness answer that
// waited for it would come after the load balancer's check timeout (the
// global entry's is 1 s), which takes every region out at once.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		i   int
		err error
	}
	answers := make(chan answer, len(s.clusters))
	for i, c := range s.clusters {
		go func() { answers <- answer{i, c.Store.Ping(ctx)} }()
	}
	errs := make([]string, len(s.clusters))
	for range s.clusters {
		a := <-answers
		if a.err == nil {
			return nil
		}
		errs[a.i] = s.clusters[a.i].Name + ": " + a.err.Error()
	}
	return &store.UnavailableError{Err: errors.New("patronistore: no cluster answers: " + strings.Join(errs, "; "))}
}

// ClusterHealth is one cluster's answer to a ping.
type ClusterHealth struct {
	Cluster string
	// Err is nil when the cluster's primary answered.
	Err error
}

// Health pings every cluster.
func (s *Store) Health(ctx context.Context) []ClusterHealth {
	out := make([]ClusterHealth, len(s.clusters))
	s.each(ctx, func(ctx context.Context, i int, c clusterStore) error {
		out[i] = ClusterHealth{Cluster: s.clusters[i].Name, Err: c.Ping(ctx)}
		return nil
	})
	return out
}

// Close closes every cluster's store.
func (s *Store) Close() {
	for _, c := range s.clusters {
		c.Store.Close()
	}
}

// clusterStore is one cluster's store as the fan-outs use it.
type clusterStore = *sqlstore.Store
