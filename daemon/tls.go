package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"

	"github.com/idemcoord/idemcoord/config"
)

// listenerTLS loads the listener's certificate (tls.cert_file, key_file).
func listenerTLS(c config.ListenerTLS) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"}}, nil
}

// upstreamTransport is the transport for an https upstream verified
// against upstream_tls.ca_file (or not verified, if insecure_skip_verify),
// or nil for the defaults (system roots).
func upstreamTransport(c config.UpstreamTLS) (http.RoundTripper, error) {
	if c.CAFile == "" && !c.InsecureSkipVerify {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipVerify} //nolint:gosec // operator's explicit choice, documented
	if c.CAFile != "" {
		pool, err := certPool(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("upstream_tls.ca_file: %w", err)
		}
		tc.RootCAs = pool
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 256
	t.TLSClientConfig = tc
	return t, nil
}

// certPool reads a PEM bundle.
func certPool(file string) (*x509.CertPool, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate found", file)
	}
	return pool, nil
}
