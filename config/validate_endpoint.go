package config

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/idemcoord/idemcoord/idempotency"
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
	// methods are the HTTP methods of RFC 9110 and RFC 5789 (PATCH). A
	// misspelt method ("PSOT") would match no request, so the endpoint
	// would silently stop being coordinated.
	methods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}
	// headerRE is an RFC 9110 token.
	headerRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

// checkEndpoints validates every endpoint and reports duplicate names and
// routes.
func (c *Config) checkEndpoints(p *problems) {
	if len(c.Endpoints) == 0 {
		p.add("endpoints", "at least one endpoint is required")
	}
	names := map[string]int{}
	routes := map[string]int{}
	for i, e := range c.Endpoints {
		at := fmt.Sprintf("endpoints[%d]", i)
		if j, dup := names[e.Name]; dup && e.Name != "" {
			p.add(at+".name", "%q is already used by endpoints[%d]", e.Name, j)
		} else {
			names[e.Name] = i
		}
		segs, patErr := e.check(p, at, c.Defaults)
		if patErr != nil || e.Method == "" {
			continue
		}
		route := e.Method + " " + routeKey(segs)
		if j, dup := routes[route]; dup {
			p.add(at+".path", "%s %s is already routed to endpoints[%d] (%s)", e.Method, e.Path, j, c.Endpoints[j].Name)
		} else {
			routes[route] = i
		}
	}
}

// check validates one endpoint whose fields are reported under at. It
// returns the parsed path pattern, or the pattern's error.
func (e Endpoint) check(p *problems, at string, d Defaults) ([]Segment, error) {
	before := len(*p)
	if !nameRE.MatchString(e.Name) {
		p.add(at+".name", "must be 1 to 64 of [a-z0-9._-] starting with a letter or digit, got %q", e.Name)
	}
	checkMethod(p, at+".method", e.Method)
	segs, patErr := ParsePattern(e.Path)
	if patErr != nil {
		p.add(at+".path", "%v", patErr)
	}
	if e.Key != KeyRequired && e.Key != KeyOptional {
		p.add(at+".key", "must be %q or %q, got %q", KeyRequired, KeyOptional, e.Key)
	}
	if e.Body != "" && e.Body != BodyJSON && e.Body != BodyAny && e.Body != BodyMultipart {
		p.add(at+".body", "must be %q, %q or %q, got %q", BodyJSON, BodyAny, BodyMultipart, e.Body)
	}
	e.checkContract(p, at)
	e.checkSecrets(p, at)
	e.checkReplay(p, at)
	e.checkDedup(p, at)
	e.checkInProgress(p, at)
	e.checkOnRetry(p, at)
	e.checkDownstreamWindow(p, at)
	positive(p, at+".ttl", e.TTL)
	checkReplayTTL(p, at, e.ReplayTTL, e.TTL)
	positive(p, at+".lease", e.Lease)
	positive(p, at+".upstream_timeout", e.UpstreamTimeout)
	// Values inherited from defaults were reported there already.
	if e.TTL != d.TTL || e.Lease != d.Lease || e.UpstreamTimeout != d.UpstreamTimeout {
		checkLease(p, at, e.TTL, e.Lease, e.UpstreamTimeout)
	}
	err := idempotency.FingerprintOptions{Exclude: e.Fingerprint.Exclude}.Validate()
	addJoined(p, at+".fingerprint", err)
	checkStatuses(p, at+".store_statuses", e.StoreStatuses)
	checkStatuses(p, at+".retry_statuses", e.RetryStatuses)
	for i, s := range e.RetryStatuses {
		// A success re-run on every retry is the double effect this
		// product exists to prevent.
		if r, err := idempotency.ParseStatusRange(s); err == nil && r.Lo < 400 {
			p.add(fmt.Sprintf("%s.retry_statuses[%d]", at, i), "%q includes a non-error status; only 4xx and 5xx can mean \"did not happen\"", s)
		}
	}
	for i, h := range e.ResponseHeaders {
		if !headerRE.MatchString(h) {
			p.add(fmt.Sprintf("%s.response_headers[%d]", at, i), "%q is not a header name", h)
		}
	}
	if e.MaxRequestBytes <= 0 {
		p.add(at+".max_request_bytes", "must be positive, got %d", e.MaxRequestBytes)
	}
	if e.MaxResponseBytes <= 0 {
		p.add(at+".max_response_bytes", "must be positive, got %d", e.MaxResponseBytes)
	}
	if err := e.Failover.Validate(); err != nil {
		p.add(at+".failover", "%v", err)
	}
	if e.ResolvePath != "" {
		if err := checkResolvePath(e.ResolvePath); err != nil {
			p.add(at+".resolve_path", "%v", err)
		}
	}
	if e.CancelPath != "" {
		switch err := checkResolvePath(e.CancelPath); {
		case err != nil:
			p.add(at+".cancel_path", "%v", err)
		case !e.Async:
			p.add(at+".cancel_path", "needs async: true (only async operations outlive their request)")
		case e.ResolvePath == "":
			p.add(at+".cancel_path", "needs resolve_path (a takeover asks it whether a cancel took)")
		}
	}
	if len(*p) == before {
		// Belt and braces: whatever the protocol itself refuses that the
		// checks above missed is still reported, under the endpoint.
		addJoined(p, at, e.Policy().Validate())
	}
	return segs, patErr
}

// checkMethod reports a method that is not one of methods.
func checkMethod(p *problems, at, m string) {
	switch {
	case slices.Contains(methods, m):
	case m == "":
		p.add(at, "required: one of %s", strings.Join(methods, ", "))
	case slices.Contains(methods, strings.ToUpper(m)):
		p.add(at, "%q: methods are case-sensitive; write %s", m, strings.ToUpper(m))
	default:
		p.add(at, "%q is not an HTTP method; want one of %s", m, strings.Join(methods, ", "))
	}
}

// checkStatuses reports entries that idempotency.ParseStatusRange refuses.
func checkStatuses(p *problems, at string, ss []string) {
	for i, s := range ss {
		if _, err := idempotency.ParseStatusRange(s); err != nil {
			p.add(fmt.Sprintf("%s[%d]", at, i), "%q: want NNN, Nxx or NNN-NNN within 100-599", s)
		}
	}
}

// checkResolvePath reports why rp cannot be a resolve path (or a cancel
// path: the same rules).
func checkResolvePath(rp string) error {
	rest := strings.ReplaceAll(rp, OperationIDParam, "x")
	switch {
	case !strings.HasPrefix(rp, "/"):
		return fmt.Errorf("%q must start with /", rp)
	case !strings.Contains(rp, OperationIDParam):
		return fmt.Errorf("%q must contain %s, or every lookup would ask about the same operation", rp, OperationIDParam)
	case strings.ContainsAny(rest, "{}?#"):
		return fmt.Errorf("%q: only the placeholder %s is allowed, and no query or fragment", rp, OperationIDParam)
	}
	return nil
}

// addJoined adds each error of a (possibly errors.Join-ed) error whose text
// is "field: reason" as a problem at prefix.field.
func addJoined(p *problems, prefix string, err error) {
	if err == nil {
		return
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		field, reason, ok := strings.Cut(e.Error(), ": ")
		if !ok || strings.ContainsAny(field, " \n") {
			p.add(prefix, "%s", e.Error())
			continue
		}
		p.add(prefix+"."+field, "%s", reason)
	}
}

// checkReplayTTL reports a replay_ttl that is negative or longer than the
// endpoint's ttl: the full answer cannot outlive the key.
func checkReplayTTL(p *problems, at string, replayTTL, ttl time.Duration) {
	switch {
	case replayTTL < 0:
		p.add(at+".replay_ttl", "must be positive (or unset to keep the full answer for ttl), got %s", replayTTL)
	case ttl > 0 && replayTTL > ttl:
		p.add(at+".replay_ttl", "%s is longer than ttl %s; the full answer cannot be kept longer than the key (set at most ttl, or raise ttl)", replayTTL, ttl)
	}
}
