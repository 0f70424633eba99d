package main

import (
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/internal/reach"
)

// prodConfig is a production region's file from the repository: its
// etcd endpoints and store do not resolve here.
const prodConfig = "../../deploy/k8s/overlays/us-east/idemd.yaml"

// TestIdemctlNamesAHungStoreOrEtcdWithinConnectTimeout: against a store
// and an etcd that accept TCP and never answer, idemctl fails within
// --connect-timeout with one line naming the part, its address and the
// cause; --verbose first says what it connects to.
func TestIdemctlNamesAHungStoreOrEtcdWithinConnectTimeout(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // no dev cluster
	silent, err := reach.ListenSilent()
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	a := silent.Addr()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"store", []string{"op", "get", "00000000-0000-0000-0000-000000000001", "--dsn", "postgres://idemd:pw@" + a + "/idemcoord"},
			"idemctl: store " + a + "/idemcoord: no answer within 1s (" + a + ": TCP connects, nothing answers)\n"},
		{"etcd", []string{"regions", "--config", prodConfig, "--etcd", "http://" + a},
			"idemctl: etcd " + a + ": no answer within 1s (" + a + ": TCP connects, nothing answers)\n"},
		{"etcd verbose", []string{"regions", "--config", prodConfig, "--etcd", "http://" + a, "--verbose"},
			"idemctl: connecting to etcd http://" + a + "\nidemctl: etcd " + a + ": no answer within 1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCtl(t, nil, append(tc.args, "--connect-timeout", "1s")...)
			if r.code != 1 || !strings.HasPrefix(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and stderr starting %q", r.code, r.stderr, tc.want)
			}
			if strings.Contains(r.stderr, "pw@") {
				t.Errorf("stderr shows the password: %q", r.stderr)
			}
		})
	}
}
