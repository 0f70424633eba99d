package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	return testutil.RefusingAddr(t)
}

// TestConfigIsTheOnlySourceOfEveryConnection: with a real dev cluster
// running (and findable: its state file is where idemctl looks), idemctl
// given --config of another deployment takes etcd and the store from that
// file, and fails naming the file's addresses when they do not answer:
// it never shows or changes the dev cluster instead. Explicit --etcd and
// --dsn override the file, and without --config, naming one part never
// lets the others come from the dev cluster.
func TestConfigIsTheOnlySourceOfEveryConnection(t *testing.T) {
	c := devCluster(t)
	t.Setenv("TMPDIR", t.TempDir())
	if err := devcluster.WriteState(devcluster.StatePath(devcluster.DefaultPortBase), c.State()); err != nil {
		t.Fatal(err)
	}
	if r := runCtl(t, nil, "regions"); r.code != 0 || !strings.Contains(r.stdout, "us-east") {
		t.Fatalf("idemctl regions on the dev cluster: exit %d %s %s", r.code, r.stdout, r.stderr)
	}

	// "Production": the dev cluster's file with etcd and the store
	// elsewhere, on addresses nothing answers.
	etcdAddr, storeAddr := closedPort(t), closedPort(t)
	dev, err := os.ReadFile(c.Region("eu-west").ConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	prod := regexp.MustCompile(`endpoints: \[.*\]`).ReplaceAllString(string(dev), "endpoints: [http://"+etcdAddr+"]")
	prod = regexp.MustCompile(`dsn: .*`).ReplaceAllString(prod, "dsn: postgres://idemd@"+storeAddr+"/idemcoord")
	prodFile := filepath.Join(t.TempDir(), "prod.yaml")
	if err := os.WriteFile(prodFile, []byte(prod), 0o600); err != nil {
		t.Fatal(err)
	}
	repair := []string{"--operator", "oncall", "--reason", "INC-9"}
	tests := []struct {
		name string
		args []string
		want []string // in stderr
	}{
		{"regions", []string{"regions", "--config", prodFile}, []string{"etcd " + etcdAddr, "connection refused"}},
		{"shards", []string{"shards", "--config", prodFile}, []string{"etcd " + etcdAddr}},
		{"owner", []string{"owner", "--actor", "demo/demo", "--config", prodFile}, []string{"etcd " + etcdAddr}},
		{"op get", []string{"op", "get", "00000000-0000-0000-0000-000000000001", "--config", prodFile},
			[]string{"store " + storeAddr + "/idemcoord", "connection refused"}},
		{"audit", []string{"audit", "--config", prodFile}, []string{"store " + storeAddr}},
		{"failback", append([]string{"failback", "us-east", "--config", prodFile}, repair...), []string{"store " + storeAddr}},
		{"move", append([]string{"move", "--shard", "1", "--to", "eu-west", "--config", prodFile}, repair...),
			[]string{"store " + storeAddr}},
		{"etcd flag without config", []string{"regions", "--etcd", c.Etcd.Endpoints()[0]}, []string{"no --config given"}},
		{"dsn flag without config", append([]string{"failover", "us-east", "--dsn", c.DSN}, repair...),
			[]string{"no --config given"}},
		{"etcd TLS flag", []string{"regions", "--config", prodFile, "--etcd-cacert", "/nonexistent/ca.crt"},
			[]string{"etcd.tls.ca_file", "/nonexistent/ca.crt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCtl(t, nil, tc.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1; stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stdout, "us-east") || strings.Contains(r.stdout, "ACTIVE") {
				t.Errorf("printed the dev cluster's data: %q", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr %q does not name %q", r.stderr, w)
				}
			}
		})
	}
	// Explicit flags win over the file: the same file with the dev
	// cluster's etcd given by --etcd reads that etcd.
	r := runCtl(t, nil, "regions", "--config", prodFile, "--etcd", strings.Join(c.Etcd.Endpoints(), ","))
	if r.code != 0 || !strings.Contains(r.stdout, "healthy") {
		t.Errorf("regions --config with --etcd: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}
