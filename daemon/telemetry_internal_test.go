package daemon

import (
	"context"
	"testing"

	"github.com/idemcoord/idemcoord/config"
)

// TestTracingFollowsTheOTLPEnvironment: spans are exported only when an
// OTLP endpoint is set in the standard variables.
func TestTracingFollowsTheOTLPEnvironment(t *testing.T) {
	cfg := &config.Config{Region: "us-east", WorkerID: "w"}
	for _, tt := range []struct {
		name, key, value string
		on               bool
	}{
		{"unset", "OTEL_EXPORTER_OTLP_ENDPOINT", "", false},
		{"endpoint", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317", true},
		{"traces endpoint", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4317", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			t.Setenv(tt.key, tt.value)
			tel, err := newTelemetry(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			// Nothing listens on the endpoint: stop without waiting for
			// the exporter's retries.
			done, cancel := context.WithCancel(context.Background())
			cancel()
			defer tel.shutdown(done)
			if got := tel.tp != nil; got != tt.on {
				t.Errorf("tracing on = %v, want %v", got, tt.on)
			}
			_, span := tel.tracerProvider().Tracer("t").Start(context.Background(), "probe")
			if got := span.SpanContext().IsValid(); got != tt.on {
				t.Errorf("span recorded = %v, want %v", got, tt.on)
			}
			span.End()
		})
	}
}
