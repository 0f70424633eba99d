package pglocal

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/idemcoord/idemcoord/internal/freeport"
	"github.com/jackc/pgx/v5"
)

// TestStartServesWhenItsFirstPortIsTakenBeforeTheServerBinds: a port
// picked free can be taken before PostgreSQL binds it (CI, stop 39: an
// "Address already in use" failed a whole test). Start then tries another
// port and the server it returns answers on the port it reports.
func TestStartServesWhenItsFirstPortIsTakenBeforeTheServerBinds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().(*net.TCPAddr).Port
	picks := 0
	pickPort = func() (int, error) {
		picks++
		if picks == 1 {
			return taken, nil
		}
		return freeport.One()
	}
	defer func() { pickPort = freeport.One }()
	s, err := Start(ctx)
	if err != nil {
		t.Fatalf("Start with its first port taken: %v", err)
	}
	defer s.Close()
	if picks != 2 {
		t.Errorf("ports picked: %d, want 2", picks)
	}
	if s.port == taken {
		t.Errorf("server reports the taken port %d", taken)
	}
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
}
