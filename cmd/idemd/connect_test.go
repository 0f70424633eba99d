package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/reach"
)

// TestAHungStoreOrEtcdFailsTheStartNamingItsAddress runs the real idemd
// against a store, then an etcd, that accept TCP connections and never
// answer: each start logs "connecting to store" / "connecting to etcd"
// with the address first, and fails within its configured bound with an
// error naming the part, its address, the cause and the setting that
// bounds it, instead of minutes of silence and "context deadline
// exceeded".
func TestAHungStoreOrEtcdFailsTheStartNamingItsAddress(t *testing.T) {
	bin := buildIdemd(t)
	silent, err := reach.ListenSilent()
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "hs256.secret")
	os.WriteFile(secretFile, []byte(strings.Repeat("s", 32)), 0o600)
	realDSN := pgtest.NewDatabase(t)
	tests := []struct {
		name, dsn, etcd string
		want            []string
	}{
		{"store", "postgres://idemd@" + silent.Addr() + "/idemcoord", "",
			[]string{`"msg":"connecting to store","region":"us-east","addr":"` + silent.Addr() + `/idemcoord"`,
				"store " + silent.Addr() + "/idemcoord: no answer within 1s (" + silent.Addr() + ": TCP connects, nothing answers) (store.connect_timeout 1s)"}},
		{"etcd", realDSN, "http://" + silent.Addr(),
			[]string{`"msg":"connecting to etcd","region":"us-east","endpoints":"http://` + silent.Addr() + `"`,
				"etcd " + silent.Addr() + ": no answer within 1s (" + silent.Addr() + ": TCP connects, nothing answers) (etcd.dial_timeout 1s)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			etcd := ""
			if tc.etcd != "" {
				etcd = fmt.Sprintf("etcd: {endpoints: [%q], dial_timeout: 1s}\n", tc.etcd)
			}
			cfgFile := filepath.Join(dir, tc.name+".yaml")
			os.WriteFile(cfgFile, fmt.Appendf(nil, `region: us-east
listen: 127.0.0.1:0
upstream: http://127.0.0.1:1
store: {dsn: %q, connect_timeout: 1s}
%sauth: {issuer: dev, audience: idemcoord, hs256_secret_file: %q}
endpoints:
  - {name: create-payment, method: POST, path: /v1/payments}
`, tc.dsn, etcd, secretFile), 0o600)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "run", "--config", cfgFile, "--migrate", "--log-format", "json").CombinedOutput()
			if err == nil || ctx.Err() != nil {
				t.Fatalf("idemd run: %v (context: %v), want a failed start\n%s", err, ctx.Err(), out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
