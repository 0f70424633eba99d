package pglocal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSharedBuffersOptionSizesTheServer: a server started with
// SharedBuffers runs with that shared_buffers, one started without it
// with the default; a size that is not one is refused before anything
// starts, naming the setting.
func TestSharedBuffersOptionSizesTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range []struct {
		opts []Option
		want string
	}{{[]Option{SharedBuffers("64MB")}, "64MB"}, {nil, DefaultSharedBuffers}} {
		s, err := Start(ctx, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err != nil {
			s.Close()
			t.Fatal(err)
		}
		var got string
		err = conn.QueryRow(ctx, "SHOW shared_buffers").Scan(&got)
		conn.Close(ctx)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("shared_buffers = %s, want %s", got, c.want)
		}
	}
	for _, bad := range []string{"6 GB", "6GB -c fsync=on", "", "0", "lots"} {
		if _, err := Start(ctx, SharedBuffers(bad)); err == nil || !strings.Contains(err.Error(), "shared_buffers") {
			t.Errorf("SharedBuffers(%q): %v, want an error naming shared_buffers", bad, err)
		}
	}
}
