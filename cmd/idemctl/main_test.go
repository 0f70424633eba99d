package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/devcluster"
)

func TestDevToken(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	secret := strings.Repeat("ab", 32)
	st := devcluster.State{PortBase: devcluster.DefaultPortBase, PID: os.Getpid(), Secret: secret}
	if err := devcluster.WriteState(devcluster.StatePath(st.PortBase), st); err != nil {
		t.Fatal(err)
	}
	cmd := rootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"dev", "token", "--actor", "alice"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	v, err := authn.NewVerifier(authn.Config{Issuer: devcluster.Issuer, Audience: devcluster.Audience, HS256Secret: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.VerifyToken(strings.TrimSpace(out.String()))
	if err != nil || p.Scope() != "demo/alice" {
		t.Fatalf("token verifies as %q, %v; want demo/alice", p.Scope(), err)
	}
}

func TestDevTokenWithoutCluster(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	cmd := rootCmd()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"dev", "token", "--actor", "alice"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "no dev cluster is running") {
		t.Fatalf("err = %v, want a clear 'no dev cluster is running'", err)
	}
}
