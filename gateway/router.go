package gateway

import (
	"fmt"
	"path"
	"strings"

	"github.com/idemcoord/idemcoord/config"
)

// Router maps a request's method and path to its configured endpoint. It is immutable once built and
// safe for concurrent use.
type Router struct {
	root *node
}

// node is one path segment position in the route tree.
type node struct {
	lits  map[string]*node            // literal segment -> child
	param *node                       // the {x} child, if any
	eps   map[string]*config.Endpoint // method -> endpoint ending here
}

// NewRouter builds a Router over copies of eps. It fails on an invalid path
// pattern or on two endpoints with the same method and route (patterns that
// differ only in parameter names are the same route).
func NewRouter(eps []config.Endpoint) (*Router, error) {
	r := &Router{root: &node{}}
	for i := range eps {
		e := eps[i] // the router owns its copy
		segs, err := config.ParsePattern(e.Path)
		if err != nil {
			return nil, fmt.Errorf("gateway: endpoint %q: path: %w", e.Name, err)
		}
		n := r.root
		for _, s := range segs {
			n = n.child(s)
		}
		if n.eps == nil {
			n.eps = map[string]*config.Endpoint{}
		}
		if prev, dup := n.eps[e.Method]; dup {
			return nil, fmt.Errorf("gateway: endpoint %q: %s %s is already routed to %q", e.Name, e.Method, e.Path, prev.Name)
		}
		n.eps[e.Method] = &e
	}
	return r, nil
}

// child returns the child for s, creating it.
func (n *node) child(s config.Segment) *node {
	if s.Param != "" {
		if n.param == nil {
			n.param = &node{}
		}
		return n.param
	}
	if n.lits == nil {
		n.lits = map[string]*node{}
	}
	c, ok := n.lits[s.Lit]
	if !ok {
		c = &node{}
		n.lits[s.Lit] = c
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
func (r *Router) Match(method, urlPath string) (*config.Endpoint, bool) {
	p := urlPath
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	p = path.Clean(p) // p itself, not a copy, when it is clean already
	e := r.root.match(method, p[1:], p == "/")
	return e, e != nil
}

// match walks the tree over rest, the path's segments left to walk
// ("a/b/c"; end is set when none is left), trying the literal child before
// the parameter child and backtracking when the literal branch has no
// endpoint.
func (n *node) match(method, rest string, end bool) *config.Endpoint {
	if end {
		return n.eps[method]
	}
	seg, tail, more := strings.Cut(rest, "/")
	if c := n.lits[seg]; c != nil {
		if e := c.match(method, tail, !more); e != nil {
			return e
		}
	}
	if n.param != nil && seg != "" {
		return n.param.match(method, tail, !more)
	}
	return nil
}
