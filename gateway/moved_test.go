package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/shard"
)

// TestARunWhoseShardMovedIsNeverAcknowledgedUnrecorded: the upstream
// answers while the actor's shard moves to another region (a region
// paused or cut off past its lease wakes up after its failover), so the
// fence refuses the result. On an endpoint with a resolve path the client
// must not get a success the store does not hold (I7): nobody would
// settle it, since a client with its answer never retries. It gets 503
// with Retry-After and the operation id, the record stays for the
// owner's takeover, and the upstream ran once. Without a resolve path
// the answer this worker holds is the only one there is: it is given. A
// shadow endpoint's client gets the upstream's answer in any case.
func TestARunWhoseShardMovedIsNeverAcknowledgedUnrecorded(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        int
	}{
		{"resolve path", "    resolve_path: /internal/operations/{operation_id}\n", http.StatusServiceUnavailable},
		{"no resolve path", "", http.StatusCreated},
		// A shadow endpoint's client gets the upstream's own answer, as
		// without the gateway: a move is never a refusal there.
		{"shadow, resolve path", "    mode: shadow\n    resolve_path: /internal/operations/{operation_id}\n", http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openStore(t, 8)
			shard := shard.Of("t/alice", shard.DefaultCount)
			if _, err := s.Pool().Exec(ctx, `UPDATE shard_fences SET owner_region = 'us-east' WHERE shard = $1`, shard); err != nil {
				t.Fatal(err)
			}
			var runs atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				// The shard fails over while the upstream works.
				if _, err := s.Pool().Exec(r.Context(), `UPDATE shard_fences SET epoch = epoch + 1, owner_region = 'eu-west'
					WHERE shard = $1`, shard); err != nil {
					t.Error(err)
				}
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"p1"}`)
			})
			g, err := gateway.Wrap(gateway.Config{Region: "us-east", Worker: "w", Store: s, Auth: verifier(t),
				Endpoints: endpoints(t, tc.extra)}, h)
			srv := served(t, g, err)

			st, hd, b := do(t, post(t, srv.URL+"/v1/things", token(t, "alice"), "moved-mid-run", `{}`))
			var state string
			if err := s.Pool().QueryRow(ctx, `SELECT state FROM idempotency_records WHERE operation_id = $1`,
				hd.Get(gateway.HeaderOperationID)).Scan(&state); err != nil {
				t.Fatalf("record of the answer %s: %v", describe(st, hd, b), err)
			}
			if st != tc.want {
				t.Fatalf("answer %s with the record %s, want %d", describe(st, hd, b), state, tc.want)
			}
			if tc.extra != "" && !strings.Contains(tc.extra, "shadow") && st < 300 && state != "COMPLETED" {
				t.Errorf("acknowledged %d while the record is %s", st, state)
			}
			if st == http.StatusCreated && !strings.Contains(string(b), `"p1"`) {
				t.Errorf("answer %s, want the upstream's own (the only one there is)", describe(st, hd, b))
			}
			if st == http.StatusServiceUnavailable && (hd.Get("Retry-After") == "" || !strings.Contains(string(b), "ownership-moving") ||
				!strings.Contains(string(b), `"new_key_safe":false`)) {
				t.Errorf("refusal %s: want Retry-After, ownership-moving, new_key_safe false", describe(st, hd, b))
			}
			if runs.Load() != 1 {
				t.Errorf("upstream ran %d times, want 1", runs.Load())
			}
		})
	}
}
