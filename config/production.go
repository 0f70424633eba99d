package config

import (
	"time"
)

// Defaults of the sections that run idemd in production (drain, TLS,
// cleanup).
const (
	// DefaultDrainTimeout bounds how long idemd, after SIGTERM, lets
	// in-flight requests finish and record their results before it exits.
	// It covers the default upstream timeout (10s) three times over;
	// Kubernetes' terminationGracePeriodSeconds must be longer than it.
	DefaultDrainTimeout = 30 * time.Second
	// DefaultCleanupInterval is how often the built-in cleanup loop deletes
	// expired finished records: often enough that a busy endpoint's
	// backlog stays a few batches deep.
	DefaultCleanupInterval = time.Minute
	// DefaultCleanupBatchSize bounds one cleanup statement (one bounded
	// delete by primary key); a pass runs batches until one comes back
	// short. It matches sqlstore.DefaultCleanupBatch.
	DefaultCleanupBatchSize = 500
	// maxCleanupBatchSize keeps one delete's locks and WAL short.
	maxCleanupBatchSize = 10000
)

// ListenerTLS makes the gateway listener serve HTTPS. Both files or
// neither: empty means plain HTTP (TLS terminated in front of idemd).
type ListenerTLS struct {
	// CertFile is the PEM certificate chain.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM private key.
	KeyFile string `yaml:"key_file"`
}

// Enabled reports whether the listener serves TLS.
func (t ListenerTLS) Enabled() bool { return t.CertFile != "" }

// UpstreamTLS configures how idemd verifies an https upstream. Empty
// means the system roots.
type UpstreamTLS struct {
	// CAFile is a PEM bundle of the roots that sign the upstream's
	// certificate, instead of the system roots.
	CAFile string `yaml:"ca_file"`
	// InsecureSkipVerify turns verification off. For test setups only:
	// a man in the middle then sees every request and answer.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// EtcdTLS is the client TLS idemd uses to reach etcd. Empty means plain
// http endpoints; CAFile alone verifies the server; CertFile and KeyFile
// (both or neither) add a client certificate for etcd's
// --client-cert-auth.
type EtcdTLS struct {
	// CAFile is a PEM bundle of the roots that sign etcd's certificates.
	CAFile string `yaml:"ca_file"`
	// CertFile is the PEM client certificate.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM client key.
	KeyFile string `yaml:"key_file"`
}

// Enabled reports whether any etcd TLS setting is given.
func (t EtcdTLS) Enabled() bool { return t.CAFile != "" || t.CertFile != "" }

// Cleanup configures the built-in loop that deletes expired finished
// records. It is safe in every instance at once: a pass deletes by primary
// key, in bounded batches, only records in resting states, so concurrent
// cleaners at worst find nothing to delete.
type Cleanup struct {
	// Interval is the time between passes. Default DefaultCleanupInterval.
	Interval time.Duration `yaml:"interval"`
	// BatchSize bounds one delete. Default DefaultCleanupBatchSize, at
	// most 10000.
	BatchSize int `yaml:"batch_size"`
	// Disabled turns the loop off (cleanup is then `idemctl op cleanup`'s).
	Disabled bool `yaml:"disabled"`
}

// fillProduction sets the production sections' defaults.
func (c *Config) fillProduction() {
	setDuration(&c.DrainTimeout, DefaultDrainTimeout)
	setDuration(&c.Cleanup.Interval, DefaultCleanupInterval)
	if c.Cleanup.BatchSize == 0 {
		c.Cleanup.BatchSize = DefaultCleanupBatchSize
	}
}

// checkProduction validates the production sections.
func (c *Config) checkProduction(p *problems) {
	positive(p, "drain_timeout", c.DrainTimeout)
	if c.DrainTimeout > 10*time.Minute {
		p.add("drain_timeout", "must be at most 10m, got %s", c.DrainTimeout)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		p.add("tls", "cert_file and key_file go together")
	}
	if c.UpstreamTLS.CAFile != "" && c.UpstreamTLS.InsecureSkipVerify {
		p.add("upstream_tls.insecure_skip_verify", "contradicts upstream_tls.ca_file: choose one")
	}
	if (c.Etcd.TLS.CertFile == "") != (c.Etcd.TLS.KeyFile == "") {
		p.add("etcd.tls", "cert_file and key_file go together")
	}
	positive(p, "cleanup.interval", c.Cleanup.Interval)
	if c.Cleanup.BatchSize <= 0 || c.Cleanup.BatchSize > maxCleanupBatchSize {
		p.add("cleanup.batch_size", "must be 1 to %d, got %d", maxCleanupBatchSize, c.Cleanup.BatchSize)
	}
}
