package config

import (
	"fmt"
	"os"
	"time"
)

// Defaults filled in by Parse. Endpoint defaults that belong to the protocol
// (TTL, lease, size caps) come from package idempotency.
const (
	// DefaultUpstreamTimeout bounds one upstream call. 10 seconds is longer
	// than a healthy payment API's p99.9 and leaves the default 30-second
	// lease 20 seconds of margin for store round trips and GC pauses, so a
	// worker whose call times out still finishes before it can be taken
	// over.
	DefaultUpstreamTimeout = 10 * time.Second
	// DefaultMaxConns is the SQL pool size of one idemd. Claims and
	// finishes are short transactions; 32 connections serve thousands of
	// them a second, and a handful of instances per region stays within
	// CockroachDB's guidance of about 4 connections per vCPU cluster-wide.
	DefaultMaxConns = 32
	// MaxGroupCommitBatch caps store.group_commit.max_batch: one
	// statement's arrays.
	MaxGroupCommitBatch = 1000
	// DefaultDialTimeout bounds connecting to etcd. etcd is off the hot
	// path, so this only decides how soon a bad endpoint list fails startup
	// or a controller gives up on one member.
	DefaultDialTimeout = 5 * time.Second
	// DefaultConnectTimeout bounds connecting to the store at start (the
	// TCP connect, TLS and authentication; not the migrations). A store
	// that is up answers in milliseconds, even across regions; one that
	// accepts TCP and never answers must fail the start in seconds, with
	// its address, not after minutes of silence.
	DefaultConnectTimeout = 5 * time.Second
	// MinEtcdLeaseTTL is the shortest liveness or election lease TTL:
	// etcd refuses leases shorter than 1.5 election timeouts (2 s with its
	// default 1 s), and a liveness lease must outlast its keepalive
	// interval (TTL/6) plus the pause and drift budgets (1.25 s).
	MinEtcdLeaseTTL = 2 * time.Second
)

// The values of etcd.down_probe (Etcd.DownProbe).
const (
	// DownProbePeer probes a suspect region's peer URL (the default).
	DownProbePeer = "peer"
	// DownProbeOff never probes: every suspect region waits confirm_delay.
	DownProbeOff = "off"
)

// Config is the whole idemd file. Parse fills in defaults; the zero value is
// not valid.
type Config struct {
	// Region is this deployment's region name, as used in etcd ownership
	// records: 1 to 32 of [a-z0-9-]. Required.
	Region string `yaml:"region"`
	// Listen is the host:port the gateway listens on. Required.
	Listen string `yaml:"listen"`
	// Upstream is the absolute http(s) URL of the API idemd fronts; a path
	// is a prefix of every forwarded path. Required.
	Upstream string `yaml:"upstream"`
	// WorkerID names this instance as lease owner in records and logs.
	// Default "" means "<hostname>-<pid>" (see WorkerName); set it when
	// hostnames are not unique or not meaningful.
	WorkerID string `yaml:"worker_id"`
	// Store is the SQL store.
	Store Store `yaml:"store"`
	// Etcd is the ownership directory. Optional in this milestone.
	Etcd Etcd `yaml:"etcd"`
	// Auth says how bearer tokens are verified.
	Auth Auth `yaml:"auth"`
	// Defaults are the endpoint settings an endpoint inherits when it does
	// not set them.
	Defaults Defaults `yaml:"defaults"`
	// Regions lists every region of the deployment, with its gateway URL
	// and failover order. Empty means single-region mode: the local region
	// alone, owning every shard. Every region's file must list the same
	// regions in the same order (the order decides each shard's home).
	Regions []Region `yaml:"regions"`
	// Shards is the number of shards actors hash to. Default
	// shard.DefaultCount (1024). It is fixed when the ownership
	// directory is bootstrapped; an instance whose count disagrees with
	// the directory's refuses to start.
	Shards int `yaml:"shards"`
	// Routing says what happens to a request for an actor another region
	// owns: RoutingForward (default) or RoutingRedirect.
	Routing string `yaml:"routing"`
	// Endpoints are the coordinated endpoints; at least one is required.
	// Requests that match none pass through uncoordinated.
	Endpoints []Endpoint `yaml:"endpoints"`
	// DrainTimeout, TLS, UpstreamTLS and Cleanup run idemd in production
	// (production.go).
	DrainTimeout time.Duration `yaml:"drain_timeout"`
	TLS          ListenerTLS   `yaml:"tls"`
	UpstreamTLS  UpstreamTLS   `yaml:"upstream_tls"`
	Cleanup      Cleanup       `yaml:"cleanup"`
}

// Store configures the store: which backend (store/backend's registry)
// and its connection.
type Store struct {
	// Backend names the store backend: "postgres" (default,
	// DefaultStoreBackend: one DSN, PostgreSQL or CockroachDB) or
	// "patroni" (one Patroni-managed PostgreSQL cluster per home region,
	// Patroni below). Another name must be registered by a backend
	// package linked into the binary.
	Backend string `yaml:"backend"`
	// DSN is the connection string (postgres://... or key=value form).
	// Required by the postgres backend; unused by patroni, whose clusters
	// carry their own. It may carry a password, so the Config must never
	// be logged whole; prefer PGPASSWORD or a passfile.
	DSN string `yaml:"dsn"`
	// Patroni configures the patroni backend: its clusters and which
	// shards each holds. Required with backend: patroni, refused
	// otherwise.
	Patroni PatroniStore `yaml:"patroni"`
	// MaxConns caps the connection pool. Default DefaultMaxConns. More
	// allows more concurrent claims but costs server memory and adds
	// contention on hot keys.
	MaxConns int `yaml:"max_conns"`
	// ConnectTimeout bounds connecting to the store at start. Default
	// DefaultConnectTimeout (5s). Longer tolerates a slow TLS handshake;
	// shorter fails a hung store sooner.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// GroupCommit sends the claims (and, separately, the finishes) that
	// arrive while one of their kind is running to the database together,
	// as one statement (docs/capacity.md, "Group commit").
	GroupCommit GroupCommit `yaml:"group_commit"`
}

// GroupCommit configures the store's group commit.
type GroupCommit struct {
	// MaxBatch is the most claims (or finishes) one statement carries.
	// Default sqlstore.DefaultGroupCommit's (8); 1 turns group commit
	// off, every request then sends its own statements. Larger batches
	// save more database CPU per request under load; past about half the
	// concurrent requests they stop helping.
	MaxBatch int `yaml:"max_batch"`
	// MaxQueueWait bounds how long a request waits for a statement of its
	// kind to finish before its batch goes on its own. Default
	// sqlstore.DefaultGroupCommit's (50ms). Shorter bounds the delay a
	// stalled statement adds to the requests behind it; longer batches
	// more where statements are slow (across regions).
	MaxQueueWait time.Duration `yaml:"max_queue_wait"`
}

// Etcd configures the etcd cluster that holds shard ownership.
type Etcd struct {
	// Endpoints are the etcd client URLs (http:// or https://). Empty means
	// no etcd: single-region mode.
	Endpoints []string `yaml:"endpoints"`
	// DialTimeout bounds connecting to etcd, and its first read at start.
	// Default DefaultDialTimeout.
	DialTimeout time.Duration `yaml:"dial_timeout"`
	// LivenessTTL is the TTL of this instance's liveness lease, whole
	// seconds, at least MinEtcdLeaseTTL. Default 0:
	// ownership.DefaultLivenessTTL (2s). Shorter detects a lost region
	// sooner (its shards move about one TTL after it stopped answering)
	// but lets a shorter etcd hiccup or process stall look like a dead
	// region (a stall under 5/6 of it is always survived).
	LivenessTTL time.Duration `yaml:"liveness_ttl"`
	// ElectionTTL is the TTL of the failover controller's election lease,
	// whole seconds, at least MinEtcdLeaseTTL: a controller that died
	// with its region is replaced within it. Default 0:
	// failover.DefaultElectionTTL (2s).
	ElectionTTL time.Duration `yaml:"election_ttl"`
	// ConfirmDelay is how long a region must have no liveness key before
	// the controller fails it over. Default 0:
	// failover.DefaultConfirmDelay (500ms). Shorter adds less to every
	// failover; longer rides out an instance that lost its lease and
	// registers again. A clean shutdown of a region's last instance skips
	// it.
	ConfirmDelay time.Duration `yaml:"confirm_delay"`
	// DownProbe is how a region that just lost its last liveness key is
	// told from one whose instance runs and may register again: "peer"
	// (the default, when empty) opens one connection to its peer URL
	// (regions[].url) and asks /healthz; a refused connection, one closed
	// before any answer, or an answer that it cannot reach etcd, fails it
	// at once, and no byte for half of confirm_delay past two connect
	// times (a stopped process) then, instead of after confirm_delay;
	// "off" always waits confirm_delay. An instance that answers is never
	// failed sooner.
	DownProbe string `yaml:"down_probe"`
	// TLS is the client TLS to etcd (production.go).
	TLS EtcdTLS `yaml:"tls"`
}

// Auth configures bearer-token verification (see package authn). At least
// one of HS256SecretFile, HS256SecretEnv and PublicKeyFiles is required; the
// two secret sources exclude each other.
type Auth struct {
	// Issuer is the required "iss" claim. Required.
	Issuer string `yaml:"issuer"`
	// Audience must appear in the "aud" claim. Required.
	Audience string `yaml:"audience"`
	// HS256SecretFile is a file holding the HS256 secret (at least 32
	// bytes; one trailing newline is ignored). Keeps the secret out of
	// this file.
	HS256SecretFile string `yaml:"hs256_secret_file"`
	// HS256SecretEnv is the name of an environment variable holding the
	// HS256 secret, for platforms that inject secrets as variables.
	HS256SecretEnv string `yaml:"hs256_secret_env"`
	// PublicKeyFiles are PEM public keys: RSA enables RS256, EC P-256
	// ES256. A file's name without extension is its kid.
	PublicKeyFiles []string `yaml:"public_key_files"`
	// Leeway is the clock skew tolerated on exp, nbf and iat. Default
	// authn.DefaultLeeway (30s), at most authn.MaxLeeway. Larger tolerates
	// worse clocks and lets expired tokens live longer.
	Leeway time.Duration `yaml:"leeway"`
}

// Defaults are inherited by every endpoint that leaves the field unset.
type Defaults struct {
	// TTL is how long a key is remembered. Default idempotency.DefaultTTL
	// (24h).
	TTL time.Duration `yaml:"ttl"`
	// Lease is how long a worker owns an operation. Default
	// idempotency.DefaultLease (30s).
	Lease time.Duration `yaml:"lease"`
	// UpstreamTimeout bounds one upstream call. Default
	// DefaultUpstreamTimeout (10s); it must be shorter than Lease.
	UpstreamTimeout time.Duration `yaml:"upstream_timeout"`
}

// WorkerName returns the lease-owner name of this instance: WorkerID, or
// "<hostname>-<pid>" when it is empty. The pid tells apart two processes on
// one host, such as the old and new process of a rolling restart.
func (c *Config) WorkerName() string {
	if c.WorkerID != "" {
		return c.WorkerID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}
