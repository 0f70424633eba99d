package sqlstore_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// logRecorder keeps the messages of a store's logs.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	msg := rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		return true
	})
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
	return nil
}

// find returns the logged messages that start with prefix.
func (r *logRecorder) find(prefix string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		if strings.HasPrefix(m, prefix) {
			out = append(out, m)
		}
	}
	return out
}
