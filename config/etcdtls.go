package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// Client returns the TLS configuration of an etcd client (idemd's, and
// idemctl's --etcd-cacert/--etcd-cert/--etcd-key), or nil when no setting
// is given: plain http:// endpoints, or https:// ones verified against the
// system roots. Errors name the field (etcd.tls.ca_file, ...).
func (t EtcdTLS) Client() (*tls.Config, error) {
	if !t.Enabled() && t.KeyFile == "" {
		return nil, nil
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, fmt.Errorf("etcd.tls: cert_file and key_file go together (a client certificate and its key), got only one")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		b, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("etcd.tls.ca_file: %s: no PEM certificate found", t.CAFile)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd.tls.cert_file/key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}
