package config

// Example is a complete, valid idemd file with every field commented. The
// README embeds it; a test parses and validates it. It reads the HS256
// secret from the environment variable IDEMD_HS256_SECRET.
const Example = `# idemd configuration: one file per region.
# Durations use Go syntax (300ms, 30s, 24h). Sizes are bytes or a whole
# number with a binary unit (512B, 64KiB, 1MiB, 1GiB).
# Unknown fields are errors, so a misspelt setting never silently falls back
# to its default.

# This region's name as used in etcd ownership records: [a-z0-9-], 1-32.
region: us-east
# Address the gateway listens on (host:port).
listen: 127.0.0.1:7101
# The API idemd fronts. Requests are forwarded unchanged, plus
# X-Idempotency-Operation-Id and X-Idempotency-Actor.
upstream: http://127.0.0.1:7200
# Lease-owner name of this instance; empty means <hostname>-<pid>.
worker_id: ""

store:
  # CockroachDB (PostgreSQL for tests). Keep passwords out of this file:
  # use PGPASSWORD or a passfile.
  dsn: postgres://idemd@127.0.0.1:26257/idemcoord?sslmode=verify-full
  # Connection pool size (default 32).
  max_conns: 32

etcd:
  # Shard ownership directory; empty means single-region mode.
  endpoints: [http://127.0.0.1:2379]
  dial_timeout: 5s

auth:
  # Required "iss" claim, and a value required in "aud".
  issuer: idemcoord-dev
  audience: idemcoord
  # HS256 shared secret (at least 32 bytes) from an environment variable.
  # Alternatively hs256_secret_file: /etc/idemd/hs256.secret
  hs256_secret_env: IDEMD_HS256_SECRET
  # RS256 / ES256 public keys (PEM). A file's name without extension is
  # its kid. Both kinds of key may be configured at once.
  # public_key_files: [/etc/idemd/keys/idp-2025-06.pem]
  # Clock skew tolerated on exp/nbf/iat (default 30s, at most 5m).
  leeway: 30s

# Inherited by every endpoint that does not set its own value.
defaults:
  ttl: 24h              # how long a key is remembered
  lease: 30s            # how long a worker owns an operation
  upstream_timeout: 10s # must be shorter than lease

endpoints:
  # A charge: the key is mandatory, the outcome can be queried, and the
  # endpoint refuses to serve while its owner region is unreachable.
  - name: create-payment       # stable: part of every stored key's scope
    method: POST
    path: /v1/payments         # {name} matches one path segment
    key: required              # required | optional
    ttl: 48h
    lease: 30s
    upstream_timeout: 10s      # < lease, or a live worker is taken over
    fingerprint:
      # JSON pointers of fields a client may change between retries.
      exclude: [/client_timestamp, /trace_id]
      # true makes {"a": null} the same request as {}.
      null_equals_missing: false
    # Upstream error statuses stored and replayed as final (default 4xx);
    # 2xx and 3xx answers are always stored and replayed.
    store_statuses: [2xx, 4xx]
    # Statuses that mean "did not happen, run again on the next retry".
    retry_statuses: [408, 425, 429, 500, 502-504]
    # Response headers stored and replayed; nothing else is kept.
    response_headers: [Content-Type, Location]
    max_request_bytes: 1MiB    # larger bodies get 413
    max_response_bytes: 64KiB  # larger responses are marked too large, not stored
    async: false
    failover: reject           # reject | transfer
    # Asked with GET when an upstream call timed out: 200 = it ran,
    # 404 = it did not, anything else = still unknown.
    resolve_path: /internal/operations/{operation_id}

  # Capturing a payment by id: everything else from the defaults.
  - name: capture-payment
    method: POST
    path: /v1/payments/{payment_id}/capture
    resolve_path: /internal/operations/{operation_id}

  # A low-risk write that keeps serving during a region failover, for
  # clients still migrating to keys.
  - name: update-profile
    method: PATCH
    path: /v1/profiles/{profile_id}
    key: optional
    ttl: 1h
    failover: transfer

  # A long-running export: 202 with a status URL; a retry gets the same
  # task, never a second one.
  - name: create-export
    method: POST
    path: /v1/exports
    async: true
    max_request_bytes: 16KiB
    failover: transfer
`
