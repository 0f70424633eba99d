package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/idemcoord/idemcoord/gateway"
	"github.com/idemcoord/idemcoord/idempotency"
)

// TestARunWhoseShardMovedIsHandedToTheNewOwnerWhichAnswersIt: east ran a
// payment (the bank charged it) while its shard failed over to west, so
// the fence refuses east's result. Nobody retries, and the sweep never
// ticks. On an endpoint whose upstream deduplicates by operation id, east
// hands the call to west (the owner the store's fence names) instead of
// sending its client away for a Retry-After second: west takes the
// operation over at once, learns from the resolve path that it ran, records
// it and answers. The client gets the one charge, from west, recorded
// COMPLETED; the bank charged once. Without the declaration west could
// not take over a live lease at once, so east answers 503 with
// Retry-After as before.
func TestARunWhoseShardMovedIsHandedToTheNewOwnerWhichAnswersIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		dedup  string
		status int
	}{
		{"upstream dedups by operation id", "    upstream_dedup: operation_id\n", http.StatusCreated},
		{"no declaration", "", http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, bank, east, west := dedupRegions(t, tc.dedup)
			const body = `{"amount":"7.00"}`
			type answer struct {
				status       int
				region, body string
			}
			answered := make(chan answer, 1)
			go func() {
				resp, err := http.DefaultClient.Do(post(t, east.url+"/v1/things", token(t, "alice"), "handed-off", body))
				if err != nil {
					t.Error(err)
					answered <- answer{}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answered <- answer{resp.StatusCode, resp.Header.Get(gateway.HeaderRegion), string(b)}
			}()
			op := moveWhileInEast(t, s, bank, east, west)
			bank.unblock()
			a := <-answered
			if a.status != tc.status {
				t.Fatalf("east's answer after the move: %d from %q %s; want %d", a.status, a.region, a.body, tc.status)
			}
			sc := reviewScope(t, "alice", "handed-off")
			switch a.status {
			case http.StatusCreated:
				if a.region != "west" || !strings.Contains(a.body, op) {
					t.Errorf("answer %d from %q %s; want west's answer with the charge of %s", a.status, a.region, a.body, op)
				}
				if rec, err := s.Read(context.Background(), sc); err != nil || rec.State != idempotency.Completed {
					t.Errorf("record after the answer: %v, %v; want COMPLETED", rec.State, err)
				}
			case http.StatusServiceUnavailable:
				if !strings.Contains(a.body, "ownership-moving") {
					t.Errorf("refusal %s; want ownership-moving", a.body)
				}
			}
			if n := bank.total(); n != 1 {
				t.Errorf("bank charged %d times; want 1", n)
			}
		})
	}
}
