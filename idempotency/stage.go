package idempotency

import (
	"errors"
	"fmt"
	"strings"
)

// Stage is a stage an upstream reports for an operation it is executing:
// a name, and whether the operation can still be undone from there. A
// record keeps the last one in its last_stage column, in Stage.String's
// form, and a cancel is promised only while that stage is reversible.
//
// The wire form (the X-Idempotency-Stage header) is a structured-field
// item, RFC 9651: a token, with the boolean parameter "reversible" when
// the operation can still be cancelled ("reserved;reversible"). A stage
// without the parameter is irreversible: an upstream that says nothing
// about a stage has promised nothing about it.
type Stage struct {
	// Name is a token, e.g. "reserved" or "captured".
	Name string
	// Reversible reports that a cancel can still stop the operation
	// before it takes effect.
	Reversible bool
}

// StageCancelled is the reserved stage name with which an upstream says
// that it cancelled the operation and that the operation never takes
// effect: in the answer to a cancel, in the answer to the execution
// itself, or in a resolve answer.
const StageCancelled = "cancelled"

// ReversibleParam is the stage parameter that marks a reversible stage,
// as stored (the store's cancel checks for it in SQL).
const ReversibleParam = ";reversible"

// ErrStage means a stage is not a token with at most the reversible
// parameter.
var ErrStage = errors.New("idempotency: malformed stage")

// ParseStage parses a stage in its wire or stored form. Whitespace around
// the item is ignored; "reversible=?1" is "reversible", "reversible=?0"
// is no parameter.
func ParseStage(v string) (Stage, error) {
	v = strings.TrimSpace(v)
	name, params, _ := strings.Cut(v, ";")
	if !isToken(name) {
		return Stage{}, fmt.Errorf("%w: name %q is not a token", ErrStage, name)
	}
	st := Stage{Name: name}
	switch strings.TrimSpace(params) {
	case "":
		if strings.Contains(v, ";") {
			return Stage{}, fmt.Errorf("%w: empty parameter", ErrStage)
		}
	case "reversible", "reversible=?1":
		st.Reversible = true
	case "reversible=?0":
	default:
		return Stage{}, fmt.Errorf("%w: only the parameter reversible is known", ErrStage)
	}
	return st, nil
}

// String is the stage's stored and wire form.
func (s Stage) String() string {
	if s.Reversible {
		return s.Name + ReversibleParam
	}
	return s.Name
}

// Cancelled reports whether the stage is StageCancelled.
func (s Stage) Cancelled() bool { return s.Name == StageCancelled }

// isToken reports whether s is a structured-field token: a letter or
// "*", then token characters.
func isToken(s string) bool {
	if s == "" || !(isAlpha(s[0]) || s[0] == '*') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(isAlpha(c) || (c >= '0' && c <= '9') || strings.IndexByte("!#$%&'*+-.^_`|~:/", c) >= 0) {
			return false
		}
	}
	return true
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }
