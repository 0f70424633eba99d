package config

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Router maps a request to its endpoint. It is immutable once built and
// safe for concurrent use.
type Router struct {
	root *node
}

// node is one path segment position in the route tree.
type node struct {
	lits  map[string]*node     // literal segment -> child
	param *node                // the {x} child, if any
	eps   map[string]*Endpoint // method -> endpoint ending here
}

// NewRouter builds a Router over copies of eps. It fails on an invalid path
// pattern or on two endpoints with the same method and route (patterns that
// differ only in parameter names are the same route).
func NewRouter(eps []Endpoint) (*Router, error) {
	r := &Router{root: &node{}}
	for i := range eps {
		e := eps[i] // the router owns its copy
		segs, err := parsePattern(e.Path)
		if err != nil {
			return nil, fmt.Errorf("config: endpoint %q: path: %w", e.Name, err)
		}
		n := r.root
		for _, s := range segs {
			n = n.child(s)
		}
		if n.eps == nil {
			n.eps = map[string]*Endpoint{}
		}
		if prev, dup := n.eps[e.Method]; dup {
			return nil, fmt.Errorf("config: endpoint %q: %s %s is already routed to %q", e.Name, e.Method, e.Path, prev.Name)
		}
		n.eps[e.Method] = &e
	}
	return r, nil
}

// Router returns a Router over the endpoints of c.
func (c *Config) Router() (*Router, error) { return NewRouter(c.Endpoints) }

// child returns the child for s, creating it.
func (n *node) child(s segment) *node {
	if s.param != "" {
		if n.param == nil {
			n.param = &node{}
		}
		return n.param
	}
	if n.lits == nil {
		n.lits = map[string]*node{}
	}
	c, ok := n.lits[s.lit]
	if !ok {
		c = &node{}
		n.lits[s.lit] = c
	}
	return c
}

// Match returns the endpoint of method and the request path urlPath
// (r.URL.Path, already unescaped). The method must match exactly. Segments
// are compared left to right, a literal segment winning over a {param}: for
// "/v1/payments/search" the pattern /v1/payments/search beats
// /v1/payments/{id}, and for "/a/b/c" /a/b/{y} beats /a/{x}/c.
//
// The path is cleaned first ("/v1//payments/./" is "/v1/payments"): an
// upstream that normalises paths would run such a request as the endpoint,
// so it must be coordinated as the endpoint too, not slip through as an
// unmatched path.
func (r *Router) Match(method, urlPath string) (*Endpoint, bool) {
	p := path.Clean("/" + urlPath)
	var segs []string
	if p != "/" {
		segs = strings.Split(p[1:], "/")
	}
	e := r.root.match(method, segs)
	return e, e != nil
}

// match walks the tree, trying the literal child before the parameter
// child and backtracking when the literal branch has no endpoint.
func (n *node) match(method string, segs []string) *Endpoint {
	if len(segs) == 0 {
		return n.eps[method]
	}
	if c := n.lits[segs[0]]; c != nil {
		if e := c.match(method, segs[1:]); e != nil {
			return e
		}
	}
	if n.param != nil && segs[0] != "" {
		return n.param.match(method, segs[1:])
	}
	return nil
}

// segment is one segment of a path pattern: a literal, or a parameter.
type segment struct {
	lit   string
	param string // parameter name without braces; "" for a literal
}

var paramRE = regexp.MustCompile(`^\{[A-Za-z_][A-Za-z0-9_]*\}$`)

// parsePattern splits a path pattern into segments. "/" has none.
func parsePattern(pat string) ([]segment, error) {
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
	var segs []segment
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
			segs = append(segs, segment{param: name})
		case strings.ContainsAny(s, "{}"):
			return nil, fmt.Errorf("%q: segment %q: a parameter is a whole segment {name}, name of [A-Za-z0-9_]", pat, s)
		default:
			segs = append(segs, segment{lit: s})
		}
	}
	return segs, nil
}

// routeKey returns a pattern with parameter names erased, so that two
// patterns matching the same paths have the same key.
func routeKey(segs []segment) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteByte('/')
		if s.param != "" {
			b.WriteString("{}")
		} else {
			b.WriteString(s.lit)
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}
