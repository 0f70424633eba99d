package validate

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"

	"github.com/idemcoord/idemcoord/chaos/history"
)

// regInput is a write of a request body under the key.
type regInput struct{ body string }

// regOutput is what the write returned.
type regOutput struct {
	kind   outKind
	status int
	resp   string
}

type outKind int

const (
	outAck      outKind = iota + 1 // a 2xx: the stored response, first run or replay
	outMismatch                    // a 422: the key holds another body
	outUnknown                     // no answer, or a 5xx: may have happened
)

// regState is the write-once register: unset, or set by one body with one
// stored response (known once an answer showed it).
type regState struct {
	set    bool
	body   string
	known  bool
	status int
	resp   string
}

// registerModel is a write-once register where an unknown outcome may
// have happened (and its stored response is then learnt from the first
// answer that shows it), after etcd's robustness models.
var registerModel = porcupine.NondeterministicModel{
	Init: func() []any { return []any{regState{}} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(regState), input.(regInput), output.(regOutput)
		switch out.kind {
		case outUnknown:
			if s.set {
				return []any{s}
			}
			return []any{s, regState{set: true, body: in.body}}
		case outMismatch:
			if s.set && s.body != in.body {
				return []any{s}
			}
			return nil
		}
		switch {
		case !s.set:
			return []any{regState{set: true, body: in.body, known: true, status: out.status, resp: out.resp}}
		case s.body != in.body:
			return nil
		case !s.known:
			return []any{regState{set: true, body: s.body, known: true, status: out.status, resp: out.resp}}
		case s.status == out.status && s.resp == out.resp:
			return []any{s}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		return fmt.Sprintf("write(%.8s) -> kind=%d status=%d resp=%.8s", in.body, out.kind, out.status, out.resp)
	},
}

var registerCheck = registerModel.ToModel()

// toPorcupine keeps the operations the register constrains: answers, 422s
// and unknown outcomes. An unknown outcome may take effect at any later
// time, so it never returns.
func toPorcupine(ops []history.Operation) ([]porcupine.Operation, []history.Operation) {
	var pops []porcupine.Operation
	var kept []history.Operation
	for _, op := range ops {
		out := regOutput{status: op.Status, resp: op.ResponseHash}
		ret := op.Return
		switch {
		case op.Acknowledged():
			out.kind = outAck
		case op.Mismatch():
			out.kind = outMismatch
		case op.Unknown():
			out.kind, ret = outUnknown, math.MaxInt64
		default:
			continue // refused before running (409, 503 reject, never sent): no constraint
		}
		pops = append(pops, porcupine.Operation{ClientId: op.ClientID, Input: regInput{op.BodyHash},
			Call: op.Call, Output: out, Return: ret})
		kept = append(kept, op)
	}
	return pops, kept
}

// maxShrink bounds the operations the excerpt shrinker works on; past it
// the whole key's history is the excerpt.
const maxShrink = 64

// fitRegister checks one key's operations against the register. On a
// misfit it returns why and a shrunk excerpt: operations are dropped one at
// a time while the rest still does not fit.
func (ix *index) fitRegister(ops []history.Operation) (string, []history.Operation) {
	pops, kept := toPorcupine(ops)
	if len(pops) == 0 {
		return "", nil
	}
	switch porcupine.CheckOperationsTimeout(registerCheck, pops, ix.opts.RegisterTimeout) {
	case porcupine.Ok:
		return "", nil
	case porcupine.Unknown:
		return "undecided: the register search timed out", kept
	}
	if len(pops) > maxShrink {
		return "the key's answers fit no single write", kept
	}
	for i := 0; i < len(pops); {
		p := append(append([]porcupine.Operation(nil), pops[:i]...), pops[i+1:]...)
		if len(p) > 0 && porcupine.CheckOperationsTimeout(registerCheck, p, ix.opts.RegisterTimeout) == porcupine.Illegal {
			pops = p
			kept = append(append([]history.Operation(nil), kept[:i]...), kept[i+1:]...)
			continue
		}
		i++
	}
	return "the key's answers fit no single write", kept
}
