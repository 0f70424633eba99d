package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemcoord/idemcoord/idempotency"
	"github.com/idemcoord/idemcoord/store"
)

func (h suite) TestCleanupExpiryBoundary(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	req := Request(t, "tenant/alice", "boundary", `{}`)
	rec := WithState(t, s, req, idempotency.Completed)
	if rec.ExpiresAt.IsZero() || !rec.ExpiresAt.After(clock.Now()) {
		t.Fatalf("expires_at = %v, want after now %v", rec.ExpiresAt, clock.Now())
	}

	clock.Set(rec.ExpiresAt.Add(-time.Microsecond))
	if n := Cleanup(t, s, 0); n != 0 {
		t.Fatalf("1µs before expiry: cleanup deleted %d, want 0", n)
	}
	if _, err := s.Read(ctx, req.Scope); err != nil {
		t.Fatalf("1µs before expiry: %v", err)
	}
	clock.Set(rec.ExpiresAt)
	if n := Cleanup(t, s, 0); n != 1 {
		t.Fatalf("at expiry: cleanup deleted %d, want 1", n)
	}
	if _, err := s.Read(ctx, req.Scope); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("at expiry: read = %v, want ErrNotFound", err)
	}
}

func (h suite) TestCleanupDeletesOnlyRestingStates(t *testing.T) {
	ctx := context.Background()
	clock := NewClock()
	s := h.Open(t, clock)
	tests := []struct {
		state   idempotency.State
		deleted bool
	}{
		{idempotency.Pending, false},
		{idempotency.InProgress, false},
		{idempotency.OutcomeUnknown, false},
		{idempotency.Completed, true},
		{idempotency.TerminalFailure, true},
		{idempotency.RetryableFailure, true},
	}
	scopes := map[idempotency.State]store.Scope{}
	for _, tt := range tests {
		req := Request(t, "tenant/alice", "state-"+string(tt.state), `{}`)
		req.TTL = time.Hour
		WithState(t, s, req, tt.state)
		scopes[tt.state] = req.Scope
	}
	clock.Advance(365 * 24 * time.Hour) // far past every expiry and lease
	if n := Cleanup(t, s, 0); n != 3 {
		t.Errorf("cleanup deleted %d, want the 3 resting records", n)
	}
	if n := Cleanup(t, s, 0); n != 0 {
		t.Errorf("second pass deleted %d, want 0", n)
	}
	for _, tt := range tests {
		_, err := s.Read(ctx, scopes[tt.state])
		if gone := errors.Is(err, store.ErrNotFound); gone != tt.deleted {
			t.Errorf("%s: deleted = %v (read err %v), want %v", tt.state, gone, err, tt.deleted)
		}
	}
}

func (h suite) TestCleanupBatches(t *testing.T) {
	clock := NewClock()
	s := h.Open(t, clock)
	var reqs []store.ClaimRequest
	for i := range 25 {
		req := Request(t, "tenant/alice", fmt.Sprintf("batch-%02d", i), `{}`)
		req.TTL = time.Hour
		WithState(t, s, req, idempotency.Completed)
		reqs = append(reqs, req)
		clock.Advance(time.Second) // distinct expiries, in key order
	}
	keep := Request(t, "tenant/alice", "long-lived", `{}`)
	keep.TTL = 1000 * time.Hour
	WithState(t, s, keep, idempotency.Completed)

	clock.Advance(2 * time.Hour)
	var got []int
	for range 4 {
		got = append(got, Cleanup(t, s, 10))
		if len(got) == 1 {
			// Oldest expiry first: the first batch took keys 00..09.
			for i, req := range reqs {
				_, err := s.Read(context.Background(), req.Scope)
				if gone := errors.Is(err, store.ErrNotFound); gone != (i < 10) {
					t.Errorf("after the first batch, batch-%02d deleted = %v, want %v", i, gone, i < 10)
				}
			}
		}
	}
	if diff := cmp.Diff([]int{10, 10, 5, 0}, got); diff != "" {
		t.Errorf("batch sizes (-want +got):\n%s", diff)
	}
	if _, err := s.Read(context.Background(), keep.Scope); err != nil {
		t.Errorf("unexpired record: %v", err)
	}
}
