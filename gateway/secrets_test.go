package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/sqlstore"
)

const (
	apiKey    = "sk_live_SHOWN_ONCE_7f3a9"
	cvc       = "cvc-9871-secret"
	secretDoc = `{"id":"key_1","api_key":"` + apiKey + `","card":{"last4":"4242","cvc":"` + cvc + `"},"n":1.50}`
)

// secretGateway serves an endpoint whose upstream answers secretDoc, with
// the secrets config given, logging into logs and metering into reader.
func secretGateway(t *testing.T, s *sqlstore.Store, secrets string, logs *lockedBuffer, readers *[]*sdkmetric.ManualReader,
	runs *atomic.Int64) *httptest.Server {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	*readers = append(*readers, reader)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { provider.Shutdown(context.Background()) })
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(secretDoc))
	})
	g, err := gateway.Wrap(gateway.Config{Region: "test", Worker: "w", Store: s, Auth: verifier(t),
		Endpoints: endpoints(t, "    secrets:\n"+secrets), Meter: provider.Meter("test"),
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}, upstream)
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, g)
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}

// newKey sets env to a fresh base64 AES-256 key.
func newKey(t *testing.T, env string) {
	b := make([]byte, 32)
	rand.Read(b)
	t.Setenv(env, base64.StdEncoding.EncodeToString(b))
}

// rowsHolding counts records whose row, as text (bytea in hex), holds s.
func rowsHolding(t *testing.T, s *sqlstore.Store, needle string) int {
	t.Helper()
	var n int
	err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM idempotency_records r
		WHERE strpos(r::text, $1) > 0 OR strpos(r::text, encode(convert_to($1, 'UTF8'), 'hex')) > 0`, needle).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func metricsText(t *testing.T, r *sdkmetric.ManualReader) string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v", rm)
}

func TestEncryptedSecretsAreNeverStoredInClearAndOpenOnlyWithTheirKey(t *testing.T) {
	s := openStore(t, 8)
	newKey(t, "SECRETS_K1")
	newKey(t, "SECRETS_K2")
	k1 := "      - {id: k1, env: SECRETS_K1}\n"
	k2 := "      - {id: k2, env: SECRETS_K2}\n"
	fields := "      mode: encrypt\n      fields: [/api_key, /card/cvc]\n      keys:\n"
	var logs lockedBuffer
	var runs atomic.Int64
	var readers []*sdkmetric.ManualReader
	first := secretGateway(t, s, fields+k1, &logs, &readers, &runs)
	alice := token(t, "alice")
	const key = "secret-key-0001"
	send := func(srv *httptest.Server) (int, http.Header, string) {
		return do(t, post(t, srv.URL+"/v1/things", alice, key, `{"n":1}`))
	}

	if status, _, body := send(first); status != http.StatusCreated || body != secretDoc {
		t.Fatalf("first run: %d %s; want the upstream's answer, secrets shown", status, body)
	}
	for _, secret := range []string{apiKey, cvc} {
		if n := rowsHolding(t, s, secret); n != 0 {
			t.Fatalf("%d record rows hold %q in clear", n, secret)
		}
	}
	if rowsHolding(t, s, "key_1") != 1 {
		t.Fatal("the stored body lost its other fields")
	}

	// The owner's replay opens them, on this instance and on one whose
	// keys were rotated (k2 seals now; k1 still opens).
	rotated := secretGateway(t, s, fields+k2+k1, &logs, &readers, &runs)
	for name, srv := range map[string]*httptest.Server{"same keys": first, "rotated": rotated} {
		status, h, body := send(srv)
		if status != http.StatusCreated || h.Get("Idempotent-Replayed") != "true" || body != secretDoc {
			t.Fatalf("%s: replay %d %q %s; want the first answer, byte for byte", name, status, h.Get("Idempotent-Replayed"), body)
		}
	}

	// A key id no longer configured, or another key under the same id,
	// fails closed: 500, no secret, no sealed form.
	t.Setenv("SECRETS_K1_WRONG", base64.StdEncoding.EncodeToString(make([]byte, 32)))
	for name, keys := range map[string]string{
		"k1 removed": k2,
		"wrong k1":   k2 + "      - {id: k1, env: SECRETS_K1_WRONG}\n",
	} {
		srv := secretGateway(t, s, fields+keys, &logs, &readers, &runs)
		status, _, body := send(srv)
		if status != http.StatusInternalServerError || strings.Contains(body, apiKey) || strings.Contains(body, "sealed") {
			t.Fatalf("%s: %d %s; want a 500 that shows nothing", name, status, body)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("upstream ran %d times, want 1", runs.Load())
	}
	for _, secret := range []string{apiKey, cvc, os.Getenv("SECRETS_K1"), os.Getenv("SECRETS_K2")} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("logs hold %q", secret)
		}
		for _, r := range readers {
			if strings.Contains(metricsText(t, r), secret) {
				t.Fatalf("metrics hold %q", secret)
			}
		}
	}

	// Purge removes the sealed values with the body.
	if _, err := s.Purge(context.Background(), "ops", "erasure request", "t/alice"); err != nil {
		t.Fatal(err)
	}
	if n := rowsHolding(t, s, "idemcoord-sealed"); n != 0 {
		t.Fatalf("%d rows still hold sealed secrets after purge", n)
	}
}

func TestRedactedSecretsReplayAsThePlaceholderAndSaySo(t *testing.T) {
	s := openStore(t, 8)
	var logs lockedBuffer
	var runs atomic.Int64
	var readers []*sdkmetric.ManualReader
	srv := secretGateway(t, s, "      mode: redact\n      fields: [/api_key, /card/cvc, /absent]\n", &logs,
		&readers, &runs)
	alice := token(t, "alice")
	if status, _, body := do(t, post(t, srv.URL+"/v1/things", alice, "redact-key-1", `{}`)); status != http.StatusCreated || body != secretDoc {
		t.Fatalf("first run: %d %s", status, body)
	}
	status, h, body := do(t, post(t, srv.URL+"/v1/things", alice, "redact-key-1", `{}`))
	want := strings.NewReplacer(`"`+apiKey+`"`, `"`+gateway.SecretPlaceholder+`"`, `"`+cvc+`"`, `"`+gateway.SecretPlaceholder+`"`).Replace(secretDoc)
	if status != http.StatusCreated || body != want {
		t.Fatalf("replay: %d %s\nwant %s", status, body, want)
	}
	if got := h.Get(gateway.HeaderRedacted); got != "/api_key, /card/cvc" {
		t.Fatalf("%s: %q, want the redacted fields", gateway.HeaderRedacted, got)
	}
	for _, secret := range []string{apiKey, cvc} {
		if n := rowsHolding(t, s, secret); n != 0 || strings.Contains(logs.String(), secret) {
			t.Fatalf("%q in %d rows, or in the logs", secret, n)
		}
	}
}
