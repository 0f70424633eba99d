package gateway

import (
	"net"
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemcoord/idemcoord/config"
)

// serverRoute is what the HTTP semantic conventions name a request by:
// its method as they spell it and the endpoint's route template, and the
// server span's name and start attributes, built once per endpoint (and
// per method for the requests no endpoint matched).
type serverRoute struct {
	// method is http.request.method: the request's, or "_OTHER" for a
	// method the conventions do not know.
	method string
	// route is http.route, the endpoint's configured path template
	// (/v1/payments/{id}), never the request's path; "" when no endpoint
	// matched.
	route string
	// span is the server span's name: "{method} {route}", the method
	// alone without a route, "HTTP" for an _OTHER method.
	span  string
	start trace.SpanStartEventOption
}

// otherMethod is http.request.method of a method the conventions do not
// know (the original goes in http.request.method_original).
const otherMethod = "_OTHER"

// knownMethods are the methods the conventions spell as they are.
var knownMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
	http.MethodConnect, http.MethodOptions, http.MethodTrace, http.MethodPatch}

// newServerRoute builds method's route (route "" for none).
func newServerRoute(method, route string) *serverRoute {
	rt := &serverRoute{method: method, route: route, span: method}
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method)}
	switch {
	case method == otherMethod:
		rt.span = "HTTP"
	case route != "":
		rt.span = method + " " + route
		attrs = append(attrs, semconv.HTTPRoute(route))
	}
	rt.start = trace.WithAttributes(attrs...)
	return rt
}

// serverRoutes are the gateway's serverRoute values, read-only once built.
type serverRoutes struct {
	endpoints map[string]*serverRoute // by endpoint name
	methods   map[string]*serverRoute // unmatched, by known method
	other     *serverRoute            // unmatched, an unknown method
}

func newServerRoutes(eps []config.Endpoint) *serverRoutes {
	rs := &serverRoutes{endpoints: map[string]*serverRoute{}, methods: map[string]*serverRoute{},
		other: newServerRoute(otherMethod, "")}
	for _, m := range knownMethods {
		rs.methods[m] = newServerRoute(m, "")
	}
	for _, ep := range eps {
		rs.endpoints[ep.Name] = newServerRoute(ep.Method, ep.Path)
	}
	return rs
}

// of returns the route of a request: its endpoint's, as router matches
// it (as serve will), else its method's.
func (rs *serverRoutes) of(router *Router, method, path string) *serverRoute {
	if ep, ok := router.Match(method, path); ok {
		if rt := rs.endpoints[ep.Name]; rt != nil {
			return rt
		}
	}
	if rt := rs.methods[method]; rt != nil {
		return rt
	}
	return rs.other
}

// scheme is url.scheme: the scheme the request reached this server by.
func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// requestAttributes are the server span's attributes known before the
// answer, beyond its start ones: url.scheme, url.path, server.address
// and server.port (from Host), the original of an _OTHER method, and
// the region that served it.
func requestAttributes(r *http.Request, rt *serverRoute, region attribute.KeyValue) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.URLScheme(scheme(r)), semconv.URLPath(r.URL.Path), region}
	if host, port, err := net.SplitHostPort(r.Host); err == nil {
		attrs = append(attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		}
	} else if r.Host != "" {
		attrs = append(attrs, semconv.ServerAddress(r.Host))
	}
	if rt.method == otherMethod {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(r.Method))
	}
	return attrs
}
