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

// TestDevTokenPicksTheClusterByPortBase: with two dev clusters running,
// idemctl signs for the one --port-base names and refuses to guess
// without it.
func TestDevTokenPicksTheClusterByPortBase(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	secrets := map[int]string{7101: strings.Repeat("ab", 32), 7301: strings.Repeat("cd", 32)}
	for base, secret := range secrets {
		st := devcluster.State{PortBase: base, PID: os.Getpid(), Secret: secret}
		if err := devcluster.WriteState(devcluster.StatePath(base), st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := idemctl(t, "dev", "token", "--actor", "alice"); err == nil || !strings.Contains(err.Error(), "--port-base") {
		t.Fatalf("dev token with two clusters and no --port-base = %v, want a refusal naming --port-base", err)
	}
	out, err := idemctl(t, "--port-base", "7301", "dev", "token", "--actor", "alice")
	if err != nil {
		t.Fatal(err)
	}
	v, err := authn.NewVerifier(authn.Config{Issuer: devcluster.Issuer, Audience: devcluster.Audience, HS256Secret: []byte(secrets[7301])})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyToken(strings.TrimSpace(out)); err != nil {
		t.Fatalf("token from --port-base 7301 does not verify with that cluster's secret: %v", err)
	}
}
