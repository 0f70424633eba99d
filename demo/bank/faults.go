package bank

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/idemcoord/idemcoord/demo/internal/problem"
)

// DefaultFailStatus is the status FailNext answers with when FailStatus is
// zero: 503 is what a real bank's load balancer says when it sheds load.
const DefaultFailStatus = http.StatusServiceUnavailable

// Faults are the knobs a drill turns to make POST /charges misbehave. They
// apply in this order, to valid charge requests only:
//
//  1. Hang: record nothing and block until the request's context ends.
//  2. FailNext: while it is > 0, answer FailStatus without recording and
//     decrement it.
//  3. DelayBefore: sleep, then record (nothing is recorded if the request's
//     context ends first).
//  4. DelayAfter: after recording, sleep before answering; if the context
//     ends first the charge stands and no answer is sent — the effect
//     happened but the caller cannot know it.
//
// Over HTTP the JSON form is {"delay_before":"250ms","delay_after":"2s",
// "fail_next":3,"fail_status":503,"hang":false}; durations use Go syntax.
type Faults struct {
	// DelayBefore is slept before recording. Default 0.
	DelayBefore time.Duration
	// DelayAfter is slept after recording, before answering. Default 0.
	DelayAfter time.Duration
	// FailNext is the number of coming charge requests answered with
	// FailStatus and not recorded. Default 0.
	FailNext int
	// FailStatus is the status FailNext answers with, 400-599.
	// Default DefaultFailStatus.
	FailStatus int
	// Hang makes every charge request block, unrecorded, until its context
	// ends. Default false.
	Hang bool
}

type faultsJSON struct {
	DelayBefore string `json:"delay_before,omitempty"`
	DelayAfter  string `json:"delay_after,omitempty"`
	FailNext    int    `json:"fail_next"`
	FailStatus  int    `json:"fail_status,omitempty"`
	Hang        bool   `json:"hang"`
}

// MarshalJSON encodes f in the PUT /faults form.
func (f Faults) MarshalJSON() ([]byte, error) {
	j := faultsJSON{FailNext: f.FailNext, FailStatus: f.FailStatus, Hang: f.Hang}
	if f.DelayBefore != 0 {
		j.DelayBefore = f.DelayBefore.String()
	}
	if f.DelayAfter != 0 {
		j.DelayAfter = f.DelayAfter.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes the PUT /faults form; unknown fields are an error
// so that a misspelt knob in a drill fails loudly instead of doing nothing.
func (f *Faults) UnmarshalJSON(b []byte) error {
	var j faultsJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("bank: faults: %w", err)
	}
	out := Faults{FailNext: j.FailNext, FailStatus: j.FailStatus, Hang: j.Hang}
	for _, d := range []struct {
		name string
		in   string
		out  *time.Duration
	}{{"delay_before", j.DelayBefore, &out.DelayBefore}, {"delay_after", j.DelayAfter, &out.DelayAfter}} {
		if d.in == "" {
			continue
		}
		v, err := time.ParseDuration(d.in)
		if err != nil {
			return fmt.Errorf("bank: faults: %s: %w", d.name, err)
		}
		*d.out = v
	}
	*f = out
	return nil
}

// Validate reports the first knob out of range.
func (f Faults) Validate() error {
	switch {
	case f.DelayBefore < 0:
		return errors.New("bank: faults: delay_before must not be negative")
	case f.DelayAfter < 0:
		return errors.New("bank: faults: delay_after must not be negative")
	case f.FailNext < 0:
		return errors.New("bank: faults: fail_next must not be negative")
	case f.FailStatus != 0 && (f.FailStatus < 400 || f.FailStatus > 599):
		return errors.New("bank: faults: fail_status must be 400-599 (or 0 for the default)")
	}
	return nil
}

// SetFaults replaces every knob at once (a zero Faults clears them) and
// restarts the FailNext count. It returns Validate's error and changes
// nothing if f is invalid.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return err
	}
	if f.FailStatus == 0 {
		f.FailStatus = DefaultFailStatus
	}
	s.mu.Lock()
	s.faults, s.failLeft = f, f.FailNext
	s.mu.Unlock()
	s.log.Info("bank: faults set", "delay_before", f.DelayBefore, "delay_after", f.DelayAfter,
		"fail_next", f.FailNext, "fail_status", f.FailStatus, "hang", f.Hang)
	return nil
}

// Faults returns the knobs in force; FailNext is the number of failures
// still to serve.
func (s *Server) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	f.FailNext = s.failLeft
	return f
}

// take returns the knobs for one charge request, consuming one FailNext
// failure if any is left (fail is then the status to answer).
func (s *Server) take() (f Faults, fail int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f = s.faults
	if !f.Hang && s.failLeft > 0 {
		s.failLeft--
		fail = f.FailStatus
	}
	return f, fail
}

func (s *Server) getFaults(w http.ResponseWriter, r *http.Request) {
	problem.JSON(w, http.StatusOK, s.Faults())
}

func (s *Server) putFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&f); err != nil {
		problem.Invalid(w, "", err.Error())
		return
	}
	if err := s.SetFaults(f); err != nil {
		problem.Invalid(w, "", err.Error())
		return
	}
	problem.JSON(w, http.StatusOK, s.Faults())
}
