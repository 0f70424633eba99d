package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/config"
)

func TestDeployCockroachSQLFollowsTheConfiguredTopology(t *testing.T) {
	t.Setenv("IDEMD_HS256_SECRET", "0123456789abcdef0123456789abcdef")
	path := filepath.Join(t.TempDir(), "idemd.yaml")
	cfg := config.Example + `
shards: 16
regions:
  - name: us-east
    url: http://us-east.example
  - name: eu-west
    url: http://eu-west.example
    successors: [us-east]
  - name: ap-south
    url: http://ap-south.example
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"deploy", "cockroach-sql", "--config", path})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"us-east, eu-west, ap-south; 16 shards",
		"CASE shard % 3 WHEN 0 THEN 'us-east' WHEN 1 THEN 'eu-west' ELSE 'ap-south' END",
		// eu-west's configured successor is us-east, not the next in list order.
		`REGIONAL IN "eu-west" CONFIGURE ZONE USING
    lease_preferences = '[[+region=eu-west], [+region=us-east]]'`,
		`REGIONAL IN "ap-south" CONFIGURE ZONE USING
    lease_preferences = '[[+region=ap-south], [+region=us-east]]'`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
