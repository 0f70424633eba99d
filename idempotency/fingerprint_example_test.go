package idempotency_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/idemcoord/idemcoord/idempotency"
)

func ExampleParseKeyHeader() {
	k, err := idempotency.ParseKeyHeader(`"8e03978e-40d5-43e8-bc93-6894a57f9324"`)
	if err != nil {
		panic(err)
	}
	// Logged, the key shows only a prefix of its hash.
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	log.Info("claimed", "key", k)

	_, err = idempotency.ParseKeyHeader("caf\u00e9")
	fmt.Println(errors.Is(err, idempotency.ErrKeyInvalidChar))
	// Output:
	// level=INFO msg=claimed key=sha256:238c5b6ddb487a6d
	// true
}

func ExampleComputeFingerprint() {
	opts := idempotency.FingerprintOptions{Exclude: []string{"/client_time"}}
	first, err := idempotency.ComputeFingerprint(idempotency.Request{
		Method:      "POST",
		Path:        "/v1/payments",
		ContentType: "application/json",
		Body:        []byte(`{"amount": 100, "currency": "EUR", "client_time": "10:00:00"}`),
	}, opts)
	if err != nil {
		panic(err)
	}
	// A retry that reorders the keys, spells the amount differently and
	// carries a new client_time is the same intent.
	retry, err := idempotency.ComputeFingerprint(idempotency.Request{
		Method:      "POST",
		Path:        "/v1/payments",
		ContentType: "application/json; charset=utf-8",
		Body:        []byte(`{"client_time":"10:00:05","currency":"EUR","amount":1.00e2}`),
	}, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Equal(retry))
	// Output: true
}
