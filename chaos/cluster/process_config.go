package cluster

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/idemcoord/idemcoord/devcluster"
)

// Process cluster defaults.
const (
	// procDefaultLease is the endpoint's lease when Options.Lease is zero:
	// the shipped scenarios' 3 s, short enough that a takeover of a dead
	// or paused worker's operation falls inside a fault window.
	procDefaultLease = 3 * time.Second
	// procMaxConns is each idemd's SQL pool: three processes and the
	// drill's own pools share one throwaway PostgreSQL.
	procMaxConns = 16
)

// regionFile is what one region's idemd.yaml says: its own addresses and
// the proxied ones of everything it talks to.
type regionFile struct {
	Region, Listen, Upstream, DSN, SecretFile, Policy string
	// Clusters, when set, are the replicated store's Patroni clusters
	// (store.backend patroni), each named by its home region with the
	// region's DSN to it; DSN is then unused.
	Clusters []storeCluster
	// Etcd are the region's proxies to each etcd member.
	Etcd []string
	// Peers are the regions list in the topology's order: this region's
	// real URL, the others' through this region's peer proxies.
	Peers []peer
	// Lease and UpstreamTimeout are the endpoint's.
	Lease, UpstreamTimeout time.Duration
}

// storeCluster is one Patroni cluster of a region's store block.
type storeCluster struct {
	Name string `json:"name"`
	DSN  string `json:"dsn"`
}

// storeBlock is the region's store: one DSN, or the patroni backend over
// Clusters (the audit of repairs about no one shard in the first).
func (f regionFile) storeBlock(q func(any) string) string {
	if len(f.Clusters) == 0 {
		return fmt.Sprintf("store:\n  dsn: %s\n  max_conns: %d\n", q(f.DSN), procMaxConns)
	}
	return fmt.Sprintf("store:\n  backend: patroni\n  max_conns: %d\n  patroni:\n    audit_cluster: %s\n    clusters: %s\n",
		procMaxConns, q(f.Clusters[0].Name), q(f.Clusters))
}

type peer struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// upstreamTimeout is the endpoint's upstream timeout under lease: half of
// it, so a worker whose call times out still finishes well inside its
// lease (the configuration refuses a lease that is not longer).
func upstreamTimeout(lease time.Duration) time.Duration { return lease / 2 }

// inProgressWait is how long a retry that finds its run still in flight
// waits for it (the endpoint's in_progress.wait): the global entry's
// answer slack (haproxy.AnswerSlack), so the entry's re-send of a slow
// first attempt is answered within the entry's own server timeout.
const inProgressWait = 2 * time.Second

// render returns the region's idemd.yaml: the dev cluster's create-payment
// endpoint (same fingerprint, retry statuses and resolve path) under the
// drill's policy and lease. Values are JSON, which YAML reads as
// flow scalars and sequences.
func (f regionFile) render() []byte {
	q := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	return fmt.Appendf(nil, `region: %s
listen: %s
upstream: %s
%setcd:
  endpoints: %s
  # failure detection at the product's defaults (liveness_ttl 2s,
  # election_ttl 2s, confirm_delay 500ms): what a drill measures is what
  # a deployment gets
# every region lists the same regions in the same order (the order decides
# each shard's home); the others' URLs are this region's proxies to them
regions: %s
routing: forward
auth:
  issuer: %s
  audience: %s
  hs256_secret_file: %s
defaults:
  ttl: 24h
  lease: %s
  upstream_timeout: %s
endpoints:
  - name: create-payment
    method: POST
    path: /v1/payments
    key: required
    fingerprint:
      exclude: [/client_timestamp]
    retry_statuses: [408, 409, 425, 429, 500, 502-504]
    response_headers: [Content-Type, Location]
    failover: %s
    resolve_path: /internal/operations/{operation_id}
    # the demo payments service keeps payments.operation_id unique: an
    # intent a dead region left in flight is resolved by the new owner
    # right after the move, not after its lease
    upstream_dedup: operation_id
    # the global entry re-sends a keyed request to another region when
    # the first gives no answer within upstream_timeout + 2 s: the re-send
    # waits for the run in flight and gets its answer, not a 409
    in_progress: {wait: %s}
`, q(f.Region), q(f.Listen), q(f.Upstream), f.storeBlock(q), q(f.Etcd), q(f.Peers),
		q(devcluster.Issuer), q(devcluster.Audience), q(f.SecretFile), f.Lease, f.UpstreamTimeout, q(f.Policy), inProgressWait)
}
