package main

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/internal/etcdtest"
)

// TestEtcdClientCertificateFlagsReachAMutualTLSEtcd: against an etcd that
// requires client certificates (ETCD_CLIENT_CERT_AUTH, as deploy/etcd
// tells operators to turn on), idemctl reads it with --etcd-cacert,
// --etcd-cert and --etcd-key, and without the client certificate fails
// naming etcd and its address.
func TestEtcdClientCertificateFlagsReachAMutualTLSEtcd(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no dev cluster
	p := etcdtest.NewPKI(t)
	endpoint := etcdtest.TLSMember(t, p, true)
	ca := p.CAFile
	cliCert, cliKey := p.Issue(t, "client")
	conn := []string{"--config", prodConfig, "--etcd", endpoint, "--connect-timeout", "2s"}
	r := runCtl(t, nil, append([]string{"regions", "--etcd-cacert", ca, "--etcd-cert", cliCert, "--etcd-key", cliKey}, conn...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "us-east") {
		t.Errorf("regions with the client certificate: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = runCtl(t, nil, append([]string{"regions", "--etcd-cacert", ca}, conn...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "etcd 127.0.0.1:") {
		t.Errorf("regions without the client certificate: exit %d, stderr %q; want a failure naming etcd and its address", r.code, r.stderr)
	}
	r = runCtl(t, nil, append([]string{"regions", "--etcd-cacert", ca, "--etcd-cert", cliCert}, conn...)...)
	if r.code != 1 || !strings.Contains(r.stderr, "cert_file and key_file go together") {
		t.Errorf("--etcd-cert without --etcd-key: exit %d, stderr %q", r.code, r.stderr)
	}
}
