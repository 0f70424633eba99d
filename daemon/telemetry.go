package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idemcoord/idemcoord/config"
)

// ServiceName is the OpenTelemetry service.name of every idemd metric and
// span.
const ServiceName = "idemd"

// otlpEnv are the standard variables that turn the OTLP trace exporter on
// (otlptracegrpc reads them, and the rest of OTEL_EXPORTER_OTLP_*).
var otlpEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}

// telemetry is the daemon's metrics registry and providers.
type telemetry struct {
	reg     *prometheus.Registry
	mp      *sdkmetric.MeterProvider
	tp      *sdktrace.TracerProvider // nil: tracing off
	handler http.Handler
}

// newResource describes this instance: service.name=idemd, its worker id
// and its region (as "region", which the Prometheus exporter turns into a
// label on every series, so operators can write by (region)).
func newResource(cfg *config.Config) *resource.Resource {
	return resource.NewSchemaless(
		attribute.String("service.name", ServiceName),
		attribute.String("service.instance.id", cfg.WorkerName()),
		attribute.String("region", cfg.Region),
		attribute.String("cloud.region", cfg.Region),
	)
}

// newTelemetry builds the Prometheus registry (OpenTelemetry instruments,
// Go runtime and process collectors, all labelled with region and
// service_name) and, when the OTLP variables are set or opts give an
// exporter, a tracer provider.
func newTelemetry(ctx context.Context, cfg *config.Config, opts Options) (*telemetry, error) {
	t := &telemetry{reg: prometheus.NewRegistry()}
	res := newResource(cfg)
	exporter, err := otelprom.New(otelprom.WithRegisterer(t.reg),
		otelprom.WithResourceAsConstantLabels(attribute.NewAllowKeysFilter("region", "service.name")))
	if err != nil {
		return nil, err
	}
	t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter), sdkmetric.WithResource(res))
	labelled := prometheus.WrapRegistererWith(prometheus.Labels{"region": cfg.Region, "service_name": ServiceName}, t.reg)
	if err := errors.Join(labelled.Register(collectors.NewGoCollector()),
		labelled.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	t.handler = promhttp.HandlerFor(t.reg, promhttp.HandlerOpts{})
	exp := opts.SpanExporter
	if exp == nil && otlpConfigured() {
		if exp, err = otlptracegrpc.New(ctx); err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
		}
	}
	if exp != nil {
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	}
	return t, nil
}

// otlpConfigured reports whether an OTLP endpoint is set in the
// environment.
func otlpConfigured() bool {
	for _, k := range otlpEnv {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

// tracerProvider is the provider spans go to: a no-op one when tracing
// is off.
func (t *telemetry) tracerProvider() trace.TracerProvider {
	if t.tp == nil {
		return noop.NewTracerProvider()
	}
	return t.tp
}

// shutdown flushes pending spans and stops the providers.
func (t *telemetry) shutdown(ctx context.Context) error {
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	return errors.Join(append(errs, t.mp.Shutdown(ctx))...)
}
