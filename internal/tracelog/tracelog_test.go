package tracelog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/idemcoord/idemcoord/internal/tracelog"
)

// TestALineLoggedInASpanCarriesItsTraceAndSpanIDs: a record logged with a
// context holding a span gets trace_id and span_id (also through With);
// one without a span, or logged without a context, gets neither.
func TestALineLoggedInASpanCarriesItsTraceAndSpanIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(tracelog.Wrap(slog.NewJSONHandler(&buf, nil))).With("region", "eu")
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("test").Start(context.Background(), "op")
	defer span.End()

	for _, tt := range []struct {
		name      string
		log       func()
		traceID   string
		spanID    string
		wantIDsOn bool
	}{
		{"in a span", func() { log.InfoContext(ctx, "in") }, span.SpanContext().TraceID().String(), span.SpanContext().SpanID().String(), true},
		{"no span", func() { log.InfoContext(context.Background(), "out") }, "", "", false},
		{"no context", func() { log.Info("out") }, "", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			tt.log()
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("%q: %v", buf.String(), err)
			}
			if line["region"] != "eu" {
				t.Errorf("line %v lost the logger's attributes", line)
			}
			got, _ := line[tracelog.TraceIDKey].(string)
			gotSpan, _ := line[tracelog.SpanIDKey].(string)
			if got != tt.traceID || gotSpan != tt.spanID {
				t.Errorf("trace_id %q span_id %q, want %q %q", got, gotSpan, tt.traceID, tt.spanID)
			}
		})
	}
	if h := tracelog.Wrap(log.Handler()); h != log.Handler() {
		t.Error("wrapping a tracelog handler again wrapped it twice")
	}
}
