package config

import (
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/failover/policy"
	"github.com/idemcoord/idemcoord/idempotency"
)

// KeyMode says whether an endpoint requires an Idempotency-Key.
type KeyMode string

// Key modes.
const (
	// KeyRequired answers 400 to a request without a key. The default:
	// an endpoint is listed because retries of it must not run twice.
	KeyRequired KeyMode = "required"
	// KeyOptional passes a request without a key through uncoordinated,
	// for endpoints whose clients are migrating to keys.
	KeyOptional KeyMode = "optional"
)

// BodyType says what media type an endpoint's request bodies have.
type BodyType string

// Body types.
const (
	// BodyJSON takes a JSON body: Content-Type application/json or any
	// type/subtype+json, with any parameters. A non-empty body of any other
	// media type, or without a Content-Type, is refused with 415 before
	// anything is claimed: it would be fingerprinted as raw bytes (so
	// reordered keys would be a different request) and forwarded unchecked
	// to an upstream that expects JSON. The default for POST, PUT and
	// PATCH.
	BodyJSON BodyType = "json"
	// BodyAny takes a body of any media type, fingerprinted by its
	// Content-Type: JSON media types by value, anything else byte for
	// byte. The default for other methods.
	BodyAny BodyType = "any"
)

// OperationIDParam is the placeholder of Endpoint.ResolvePath and
// Endpoint.CancelPath that is replaced by the operation id.
const OperationIDParam = "{operation_id}"

// Endpoint is the idempotency policy of one upstream route. Zero durations
// and sizes are filled in by Parse from Defaults and package idempotency.
type Endpoint struct {
	// Name identifies the endpoint. It is the endpoint part of every
	// record's scope (actor, endpoint, key), so renaming it forgets every
	// stored key of the endpoint. Required, unique, [a-z0-9][a-z0-9._-]*,
	// at most 64 bytes.
	Name string `yaml:"name"`
	// Method is the exact, upper-case HTTP method. Required.
	Method string `yaml:"method"`
	// Path is the route pattern: literal segments, and {param} segments
	// that match any one non-empty segment. Required.
	Path string `yaml:"path"`
	// Key is "required" (default) or "optional".
	Key KeyMode `yaml:"key"`
	// TTL is how long a key is remembered after its last change. Default
	// Defaults.TTL. Longer protects later retries and costs storage.
	TTL time.Duration `yaml:"ttl"`
	// ReplayTTL is how long a finished operation's full answer (status,
	// headers, body) is kept for replays; after it the record is
	// compacted to a small dedup marker kept until TTL, and a retry gets
	// 410 replay-expired ("completed; the answer is no longer kept",
	// with the operation id and resource id) or, on a reference
	// endpoint, the resource re-read: never a second run. At most TTL.
	// Zero (the default) keeps the full answer for TTL. Long retention is
	// affordable with it: see docs/capacity.md.
	ReplayTTL time.Duration `yaml:"replay_ttl"`
	// Lease is how long a worker owns an in-flight operation without a
	// heartbeat. Default Defaults.Lease. Shorter recovers crashed workers
	// sooner; it must stay longer than UpstreamTimeout, or a live worker is
	// taken over and the intent runs twice.
	Lease time.Duration `yaml:"lease"`
	// UpstreamTimeout bounds the upstream call; a timeout makes the outcome
	// unknown. Default Defaults.UpstreamTimeout.
	UpstreamTimeout time.Duration `yaml:"upstream_timeout"`
	// Body is the media type of the request body, "json", "any" or
	// "multipart" (BodyMultipart).
	// Default "json" for POST, PUT and PATCH, "any" otherwise; see
	// DeclaredBody.
	Body BodyType `yaml:"body"`
	// Fingerprint says what of the body identifies the intent.
	Fingerprint Fingerprint `yaml:"fingerprint"`
	// StoreStatuses are the upstream statuses stored and replayed ("2xx",
	// "404", "400-451"). Empty means 2xx, 3xx and 4xx.
	StoreStatuses []string `yaml:"store_statuses"`
	// RetryStatuses are the statuses that mean "did not take effect, run
	// again on the next retry"; they win over StoreStatuses. Empty means
	// 408, 425, 429, 500, 502-504.
	RetryStatuses []string `yaml:"retry_statuses"`
	// ResponseHeaders is the allow-list of response headers stored and
	// replayed. Empty means Content-Type and Location.
	ResponseHeaders []string `yaml:"response_headers"`
	// MaxRequestBytes caps the request body (413 above it); it is also the
	// fingerprint's cap. Default 1MiB.
	MaxRequestBytes ByteSize `yaml:"max_request_bytes"`
	// MaxResponseBytes caps the stored response body. Default 64KiB. The
	// record is a replay aid, not a blob store.
	MaxResponseBytes ByteSize `yaml:"max_response_bytes"`
	// Async answers 202 with a status URL and runs the intent in the
	// background. Default false.
	Async bool `yaml:"async"`
	// Failover is "reject" (default: 503 while the owner region is down;
	// for high-risk writes) or "transfer" (move the actor's shard to a
	// surviving region under a new epoch and keep serving).
	Failover policy.Policy `yaml:"failover"`
	// ResolvePath is the upstream path asked to resolve an operation whose
	// outcome is unknown; it must contain {operation_id}. Empty means the
	// outcome cannot be queried: such operations wait for an operator.
	ResolvePath string `yaml:"resolve_path"`
	// UpstreamDedup declares what the upstream deduplicates executions by:
	// "none" (default) or "operation_id" (UpstreamDedupOperationID; needs
	// resolve_path). See UpstreamDedupOperationID for what it promises
	// and what it changes.
	UpstreamDedup UpstreamDedup `yaml:"upstream_dedup"`
	// CancelPath is the upstream path the gateway POSTs to when the owning
	// actor cancels an async operation (DELETE /v1/operations/{id}); it
	// must contain {operation_id}, and needs async and resolve_path (a
	// takeover learns through the resolve path whether a cancel took).
	// The upstream decides: 200 with X-Idempotency-Stage: cancelled, or
	// 409 naming the irreversible stage it reached. Empty means the
	// endpoint's operations cannot be cancelled.
	CancelPath string `yaml:"cancel_path"`
	// Mode is "enforce" (default) or "shadow"; see contract.go.
	Mode Mode `yaml:"mode"`
	// Limit caps replays and in-progress hits per actor; see contract.go.
	Limit Limit `yaml:"limit"`
	// Secrets are response fields never stored in clear; see secrets.go.
	Secrets Secrets `yaml:"secrets"`
	// Replay is "snapshot" (default) or "reference"; see replay.go.
	Replay Replay `yaml:"replay"`
	// InProgress says how long a retry waits for the run in flight; see
	// inprogress.go.
	InProgress InProgress `yaml:"in_progress"`
	// OnRetry is "replay" (default) or "complete": how a retry of a
	// retryably failed attempt runs; see onretry.go.
	OnRetry OnRetry `yaml:"on_retry"`
	// DownstreamWindow is how long the provider behind the upstream
	// deduplicates its own idempotency keys (Stripe v1: 24h). An attempt
	// whose operation was first claimed longer ago than this (on the
	// store's clock) is never sent again automatically: no takeover, no
	// re-run of a resolved unknown outcome, no async recovery, no
	// on_retry: complete resume. The client gets 409
	// downstream-window-passed and the operation waits for an operator
	// (package downstream). Finished answers still replay. Zero (the
	// default) is no guard. At least Lease; longer than TTL is allowed but
	// guards only retries within TTL (DownstreamWindowNote says so).
	DownstreamWindow time.Duration `yaml:"downstream_window"`
}

// Fingerprint configures idempotency.FingerprintOptions.
type Fingerprint struct {
	// Exclude lists RFC 6901 JSON pointers of body fields a client may
	// change between honest retries (timestamps, trace ids, signatures).
	Exclude []string `yaml:"exclude"`
	// NullEqualsMissing makes {"a":null} the same request as {}. Default
	// false: many APIs read an explicit null as "clear this field".
	NullEqualsMissing bool `yaml:"null_equals_missing"`
}

// DeclaredBody returns the endpoint's body type: Body if it is set, else
// BodyJSON for POST, PUT and PATCH, whose bodies carry the intent, and
// BodyAny for other methods.
func (e Endpoint) DeclaredBody() BodyType {
	if e.Body != "" {
		return e.Body
	}
	switch e.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return BodyJSON
	}
	return BodyAny
}

// AcceptsBody reports whether a request body of n bytes sent with the
// Content-Type value contentType may go to the endpoint. An empty body is
// always accepted: it has no media type to check.
func (e Endpoint) AcceptsBody(contentType string, n int) bool {
	switch {
	case n == 0:
		return true
	case e.DeclaredBody() == BodyJSON:
		return idempotency.IsJSONMediaType(contentType)
	case e.DeclaredBody() == BodyMultipart:
		return IsMultipartForm(contentType)
	}
	return true
}

// Policy returns the protocol policy of the endpoint, starting from
// idempotency.DefaultPolicy. Call it on a validated Config: entries that do
// not parse are skipped, not reported.
func (e Endpoint) Policy() idempotency.Policy {
	p := idempotency.DefaultPolicy()
	p.KeyRequired = e.Key != KeyOptional
	if e.TTL > 0 {
		p.TTL = e.TTL
	}
	if e.ReplayTTL > 0 && e.ReplayTTL < p.TTL {
		p.ReplayTTL = e.ReplayTTL
	}
	if e.Lease > 0 {
		p.Lease = e.Lease
	}
	if e.MaxRequestBytes > 0 {
		p.MaxRequestBytes = int64(e.MaxRequestBytes)
	}
	if e.MaxResponseBytes > 0 {
		p.MaxResponseBytes = int64(e.MaxResponseBytes)
	}
	p.Fingerprint = idempotency.FingerprintOptions{
		Exclude:           append([]string(nil), e.Fingerprint.Exclude...),
		NullEqualsMissing: e.Fingerprint.NullEqualsMissing,
		MaxBytes:          p.MaxRequestBytes,
	}
	if len(e.StoreStatuses) > 0 {
		p.StoreStatuses = statusRanges(e.StoreStatuses)
	}
	if len(e.RetryStatuses) > 0 {
		p.RetryStatuses = statusRanges(e.RetryStatuses)
	}
	if len(e.ResponseHeaders) > 0 {
		p.ResponseHeaders = make([]string, len(e.ResponseHeaders))
		for i, h := range e.ResponseHeaders {
			p.ResponseHeaders[i] = http.CanonicalHeaderKey(h)
		}
	}
	p.Async = e.Async
	return p
}

// statusRanges parses the valid entries of ss.
func statusRanges(ss []string) []idempotency.StatusRange {
	out := make([]idempotency.StatusRange, 0, len(ss))
	for _, s := range ss {
		if r, err := idempotency.ParseStatusRange(s); err == nil {
			out = append(out, r)
		}
	}
	return out
}
