package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdTLSChildEnv names the variable that makes the test binary act as
// the etcd client of TestIdemdTrustsTheEtcdCAFromSSLCertDir. A child
// process is needed because Go loads the system trust store, and reads
// SSL_CERT_DIR, once per process.
const etcdTLSChildEnv = "IDEMCOORD_DEPLOY_ETCD_TLS_ENDPOINT"

// TestIdemdTrustsTheEtcdCAFromSSLCertDir checks what deploy/k8s relies on
// until idemd has etcd TLS settings: an etcd client configured the way the
// daemon configures it (endpoints and a dial timeout, nothing else)
// verifies an https:// member against a CA found through SSL_CERT_DIR, and
// refuses the member when the CA is not there.
func TestIdemdTrustsTheEtcdCAFromSSLCertDir(t *testing.T) {
	if ep := os.Getenv(etcdTLSChildEnv); ep != "" {
		// The child: connect as daemon.joinEtcd does, and make one read.
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatalf("clientv3.New: %v", err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Get(ctx, "/idemcoord/probe"); err != nil {
			t.Fatalf("get over TLS: %v", err)
		}
		return
	}

	dir := t.TempDir()
	caDir, emptyDir := filepath.Join(dir, "etcd-ca"), filepath.Join(dir, "empty")
	for _, d := range []string{caDir, emptyDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := etcdtest.NewPKI(t)
	secretVolume(t, caDir, p.CAPEM())
	endpoint := etcdtest.TLSMember(t, p, false)

	for _, tc := range []struct {
		name     string
		certDir  string
		connects bool
	}{
		{"CA in SSL_CERT_DIR", caDir, true},
		{"CA absent", emptyDir, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestIdemdTrustsTheEtcdCAFromSSLCertDir$", "-test.count=1")
			cmd.Env = append(os.Environ(), etcdTLSChildEnv+"="+endpoint, "SSL_CERT_DIR="+tc.certDir)
			out, err := cmd.CombinedOutput()
			if got := err == nil; got != tc.connects {
				t.Errorf("client connected = %v, want %v; output:\n%s", got, tc.connects, out)
			}
		})
	}
}

// secretVolume writes caPEM as ca.crt into dir laid out as the kubelet
// mounts a Secret volume: the file is a symlink through ..data into a
// timestamped directory.
func secretVolume(t *testing.T, dir string, caPEM []byte) {
	t.Helper()
	ts := filepath.Join(dir, "..2026_01_01_00_00_00.000000001")
	if err := os.Mkdir(ts, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ts, "ca.crt"), caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..data/ca.crt", filepath.Join(dir, "ca.crt")); err != nil {
		t.Fatal(err)
	}
}
