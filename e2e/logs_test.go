package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/demo/bank"
	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/testutil"
)

// TestLogsCarryNoSecrets runs a cluster that logs everything, at debug
// level, as JSON into a buffer, and drives it through the paths that log
// most — first run, replay, 422, invalid and missing keys, a malformed
// body, a forged token (401), an upstream timeout (504) and its resolve,
// and the store down (503) — all with a distinctive key and body. The
// logs may carry a hash of the key, never the key, the body, a bearer
// token or the signing secret (house style rule 9; design step 1).
func TestLogsCarryNoSecrets(t *testing.T) {
	t.Parallel()
	var logs testutil.LogBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := startCluster(t, devcluster.Options{Logger: logger, UpstreamTimeout: 700 * time.Millisecond,
		BankTimeout: 5 * time.Second})
	const (
		secretKey = "secret-key-XYZ-123"
		secretRef = "ref-SECRET-BODY-7731"
		forged    = "not-a-jwt-SECRET-TOKEN-55"
	)
	tok := token(t, c, uniqueName("logs"))
	base := c.Regions[0].URL
	body := paymentBody("77.00", secretRef)
	status := func(what string, r reply, want int) {
		t.Helper()
		if r.Status != want {
			t.Errorf("%s: %v; want %d", what, r, want)
		}
	}

	status("first run", mustPost(t, base, tok, secretKey, body), http.StatusCreated)
	status("replay", mustPost(t, c.Regions[1].URL, tok, secretKey, body), http.StatusCreated)
	status("changed amount", mustPost(t, base, tok, secretKey, paymentBody("78.00", secretRef)), http.StatusUnprocessableEntity)
	status("non-ASCII key", mustPost(t, base, tok, secretKey+"\u00e9", body), http.StatusBadRequest)
	status("key with a space", mustPost(t, base, tok, secretKey+" x", body), http.StatusBadRequest)
	status("too long key", mustPost(t, base, tok, secretKey+string(bytes.Repeat([]byte("z"), 250)), body), http.StatusBadRequest)
	status("malformed body", mustPost(t, base, tok, secretKey+"-malformed", []byte(`{"reference":"`+secretRef+`",`)), http.StatusBadRequest)
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	r, err := send(ctx, http.MethodPost, base+"/v1/payments", tok, nil, body)
	if err != nil {
		t.Fatal(err)
	}
	status("missing key", r, http.StatusBadRequest)
	r, err = postPayment(ctx, base, forged, secretKey, body)
	if err != nil {
		t.Fatal(err)
	}
	status("forged token", r, http.StatusUnauthorized)

	// 504: the bank records the charge and answers after the gateway gave
	// up; the retry resolves it.
	if err := c.Bank.SetFaults(bank.Faults{DelayAfter: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	lateStart := time.Now()
	status("upstream timeout", mustPost(t, base, tok, secretKey+"-timeout", body), http.StatusGatewayTimeout)
	if err := c.Bank.SetFaults(bank.Faults{}); err != nil {
		t.Fatal(err)
	}
	var resolved reply
	_ = testutil.PollEvery(4*time.Second, 200*time.Millisecond, func() error {
		if resolved = mustPost(t, c.Regions[2].URL, tok, secretKey+"-timeout", body); resolved.Status == http.StatusConflict {
			return fmt.Errorf("resolve: %v", resolved)
		}
		return nil
	})
	status("resolve", resolved, http.StatusCreated)

	// 503: the store is down.
	if err := c.Postgres.Halt(ctx); err != nil {
		t.Fatalf("halting PostgreSQL: %v", err)
	}
	status("store down", mustPost(t, base, tok, secretKey+"-down", body), http.StatusServiceUnavailable)
	status("store down, other region", mustPost(t, c.Regions[1].URL, tok, secretKey+"-down", body), http.StatusServiceUnavailable)
	if err := c.Postgres.Resume(ctx); err != nil {
		t.Fatalf("resuming PostgreSQL: %v", err)
	}
	// Let the late original of the 504 finish and log. Deliberate: what
	// it logs is what this test reads, and nothing marks its end.
	time.Sleep(time.Until(lateStart.Add(2 * time.Second)))

	out := logs.Bytes()
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	t.Logf("%d log lines, %d bytes", len(lines), len(out))
	t.Run("no secrets", func(t *testing.T) {
		for _, secret := range []struct{ what, value string }{
			{"the idempotency key", secretKey},
			{"the request body's reference", secretRef},
			{"the request body", string(body)},
			{"the bearer token", tok},
			{"the forged token", forged},
			{"the HS256 signing secret", c.State().Secret},
		} {
			if i := bytes.Index(out, []byte(secret.value)); i >= 0 {
				t.Errorf("logs contain %s: ...%s...", secret.what, out[max(0, i-200):min(len(out), i+len(secret.value)+100)])
			}
		}
		// The paths above did log, with the key's hash: otherwise this
		// test would pass on silence.
		for _, want := range []string{`"msg":"store unavailable"`, `"msg":"upstream outcome unknown"`,
			`"msg":"outcome unknown resolved"`, `"key":"sha256:`} {
			if !bytes.Contains(out, []byte(want)) {
				t.Errorf("logs lack %s", want)
			}
		}
	})
	t.Run("one JSON object per line, unique keys", func(t *testing.T) {
		for i, line := range lines {
			if dup, err := duplicateKey(line); err != nil {
				t.Errorf("log line %d is not a JSON object (%v): %s", i, err, line)
			} else if dup != "" {
				t.Errorf("log line %d repeats the key %q: %s", i, dup, line)
			}
		}
	})
}

// duplicateKey returns the first top-level key that appears twice in the
// JSON object line, or "".
func duplicateKey(line []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("no object: %v", err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		key, _ := tok.(string)
		if seen[key] {
			return key, nil
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", err
		}
	}
	return "", nil
}
