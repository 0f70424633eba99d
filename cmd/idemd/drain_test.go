package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/idemcoord/idemcoord/authn"
	"github.com/idemcoord/idemcoord/daemon"
	"github.com/idemcoord/idemcoord/internal/etcdlocal"
	"github.com/idemcoord/idemcoord/internal/pgtest"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// buildIdemd returns the production build of this command (shared,
// cached: testutil.Idemd).
func buildIdemd(t *testing.T) string { return testutil.Idemd(t, "") }

// TestSIGTERMDrainsInFlightRequests runs a real idemd process (with a real
// PostgreSQL and an embedded etcd) and sends SIGTERM while a request is at
// the upstream: that request still gets the upstream's answer and its
// record is COMPLETED; a request sent after SIGTERM is refused at connect
// (or 503), never dropped; the liveness key is gone; the exit code is 0.
func TestSIGTERMDrainsInFlightRequests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildIdemd(t)
	ec, err := etcdlocal.Start(ctx, []string{"m1"}, etcdlocal.Options{Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()

	arrived, release := make(chan struct{}, 1), make(chan struct{})
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"payment_id":"p-1"}`)
	}))
	defer upstream.Close()
	defer close(release)

	dir := t.TempDir()
	secret := strings.Repeat("s", 32)
	secretFile := filepath.Join(dir, "hs256.secret")
	dsn := pgtest.NewDatabase(t)
	os.WriteFile(secretFile, []byte(secret), 0o600)
	cfgFile := filepath.Join(dir, "idemd.yaml")
	os.WriteFile(cfgFile, fmt.Appendf(nil, `region: us-east
listen: 127.0.0.1:0
upstream: %q
worker_id: drain-test
store: {dsn: %q, max_conns: 4}
etcd: {endpoints: [%q], dial_timeout: 2s}
auth: {issuer: dev, audience: idemcoord, hs256_secret_file: %q}
drain_timeout: 20s
endpoints:
  - {name: create-payment, method: POST, path: /v1/payments}
`, upstream.URL, dsn, ec.Endpoints()[0], secretFile), 0o600)

	logs := &testutil.LogBuffer{}
	cmd := exec.CommandContext(ctx, bin, "run", "--config", cfgFile, "--migrate", "--log-format", "json")
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if t.Failed() {
			t.Logf("idemd log:\n%s", logs.String())
		}
	}()

	// The address comes from the "region serving" line (port 0).
	var addr string
	for addr == "" {
		select {
		case err := <-exited:
			t.Fatalf("idemd exited during start: %v", err)
		case <-ctx.Done():
			t.Fatal("idemd did not start")
		case <-time.After(20 * time.Millisecond):
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "region serving" {
				addr = l.Addr
			}
		}
	}
	base := "http://" + addr

	token, err := authn.Issue([]byte(secret), "dev", "idemcoord", authn.Principal{Tenant: "t", Subject: "u"}, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	post := func(key string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/payments", strings.NewReader(`{"amount":1}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		// A connection of its own: a kept-alive one would hide whether a
		// new connection is accepted.
		return (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	}
	type answer struct {
		status int
		body   string
		err    error
	}
	inflight := make(chan answer, 1)
	go func() {
		resp, err := post("in-flight")
		if err != nil {
			inflight <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		inflight <- answer{status: resp.StatusCode, body: string(b)}
	}()
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the first request never reached the upstream")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The drain has begun once idemd logs it; the listener is closed by
	// then (Shutdown closes it first).
	for !strings.Contains(logs.String(), `"msg":"draining"`) {
		select {
		case <-ctx.Done():
			t.Fatal("idemd never logged the drain")
		case <-time.After(10 * time.Millisecond):
		}
	}
	// Wait until the listener is closed (a dial is refused), then send a
	// whole request: it must be refused, not accepted and dropped.
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		select {
		case <-ctx.Done():
			t.Fatal("idemd still accepts connections after SIGTERM")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if resp, err := post("after-sigterm"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("request after SIGTERM: status %d, want connection refused or 503", resp.StatusCode)
		}
	} else if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("request after SIGTERM: %v, want connection refused or 503", err)
	}

	release <- struct{}{}
	a := <-inflight
	if a.err != nil || a.status != http.StatusCreated || a.body != `{"payment_id":"p-1"}` {
		t.Fatalf("in-flight request: %d %q %v, want the upstream's 201", a.status, a.body, a.err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("idemd exit after SIGTERM: %v, want exit code 0", err)
		}
	case <-ctx.Done():
		t.Fatal("idemd did not exit after the drain")
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var states []string
	rows, err := conn.Query(ctx, "SELECT state FROM idempotency_records")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		states = append(states, s)
	}
	rows.Close()
	if strings.Join(states, ",") != "COMPLETED" {
		t.Errorf("records after the drain: %v, want one COMPLETED (the in-flight request's; none for the refused one)", states)
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: ec.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	live, err := cli.Get(ctx, daemon.LivenessPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if live.Count != 0 {
		t.Errorf("%d liveness keys left after exit, want 0 (the lease is revoked in the drain)", live.Count)
	}
}
