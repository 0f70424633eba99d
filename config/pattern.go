package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Segment is one segment of an endpoint's path pattern: a literal, or a
// parameter.
type Segment struct {
	// Lit is the literal segment; "" for a parameter.
	Lit string
	// Param is the parameter's name without braces; "" for a literal.
	Param string
}

var paramRE = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// ParsePattern splits an endpoint's path pattern into segments ("/" has
// none), or says what is wrong with it. Validate reports its errors under
// the endpoint's path; the gateway's router is built from its segments.
func ParsePattern(pat string) ([]Segment, error) {
	switch {
	case pat == "":
		return nil, errors.New("required")
	case !strings.HasPrefix(pat, "/"):
		return nil, fmt.Errorf("%q must start with /", pat)
	case strings.ContainsAny(pat, "?#"):
		return nil, fmt.Errorf("%q: a path pattern has no query or fragment", pat)
	case pat == "/":
		return nil, nil
	case strings.HasSuffix(pat, "/"):
		// Match cleans request paths, which drops a trailing slash.
		return nil, fmt.Errorf("%q must not end with /", pat)
	}
	seen := map[string]bool{}
	var segs []Segment
	for _, s := range strings.Split(pat[1:], "/") {
		switch {
		case s == "" || s == "." || s == "..":
			return nil, fmt.Errorf("%q: empty, . or .. segment", pat)
		case paramRE.MatchString(s):
			name := s[1 : len(s)-1]
			if seen[name] {
				return nil, fmt.Errorf("%q: parameter {%s} appears twice", pat, name)
			}
			seen[name] = true
			segs = append(segs, Segment{Param: name})
		case strings.ContainsAny(s, "{}"):
			return nil, fmt.Errorf("%q: segment %q: a parameter is a whole segment {name}, name of [A-Za-z0-9_]", pat, s)
		default:
			segs = append(segs, Segment{Lit: s})
		}
	}
	return segs, nil
}

// routeKey returns a pattern with parameter names erased, so that two
// patterns matching the same paths have the same key.
func routeKey(segs []Segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s.Param != "" {
			b.WriteString("{}")
		} else {
			b.WriteString(s.Lit)
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}
