package upstream

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/idemcoord/idemcoord/gateway/exchange"
	"github.com/idemcoord/idemcoord/idempotency"
)

// The proxy's side of one upstream call, kept to what the call needs: the
// request's headers are copied once (without hop-by-hop headers), the
// request goes to the transport as an http.Client without a cookie jar or
// timeout, never following redirects, would send it (without the copies of
// the headers that client keeps for redirects), and the answer's body is
// read into one buffer of its declared length.

// sendTrace records what the transport wrote of one request (see
// Proxy.do), and passes the upstream's informational answers to the
// stage callback.
type sendTrace struct {
	wrote atomic.Bool
	trace httptrace.ClientTrace
}

// traceSend returns ctx with a new sendTrace's hooks, for a request made
// with it. onStage, if set, sees the stages the upstream reports in
// informational answers before the final one (see stagesOf).
func traceSend(ctx context.Context, onStage func(idempotency.Stage)) (context.Context, *sendTrace) {
	st := &sendTrace{}
	st.trace = httptrace.ClientTrace{WroteHeaders: func() { st.wrote.Store(true) }, Got1xxResponse: stagesOf(onStage)}
	return httptrace.WithClientTrace(ctx, &st.trace), st
}

// detach returns ctx without its cancellation and deadline, as
// context.WithoutCancel does (exchange.Detach): ctx itself when it has neither (the request
// pipeline's context is detached already).
func detach(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok || ctx.Done() != nil {
		return exchange.Detach(ctx)
	}
	return ctx
}

// roundTrip sends req once through rt, as Proxy's former http.Client (no
// jar, no timeout, redirects returned, not followed) did: its errors are
// that client's *url.Error.
func roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	if u := req.URL.User; u != nil && req.Header.Get("Authorization") == "" {
		password, _ := u.Password()
		req.SetBasicAuth(u.Username(), password) // the upstream URL's credentials, as the client sent them
	}
	resp, err := rt.RoundTrip(req)
	if err == nil && resp == nil {
		err = fmt.Errorf("http: RoundTripper implementation (%T) returned a nil *Response with a nil error", rt)
	}
	if err != nil {
		if tlsErr, ok := err.(tls.RecordHeaderError); ok && string(tlsErr.RecordHeader[:]) == "HTTP/" {
			err = http.ErrSchemeMismatch
		}
		return nil, &url.Error{Op: urlErrorOp(req.Method), URL: stripPassword(req.URL), Err: err}
	}
	if resp.Body == nil {
		if resp.ContentLength > 0 && req.Method != http.MethodHead {
			return nil, &url.Error{Op: urlErrorOp(req.Method), URL: stripPassword(req.URL),
				Err: fmt.Errorf("http: RoundTripper implementation (%T) returned a *Response with content length %d but a nil Body", rt, resp.ContentLength)}
		}
		resp.Body = http.NoBody
	}
	if loc := resp.Header.Get("Location"); loc != "" && redirects(req, resp.StatusCode) {
		// The client read the Location of a redirect it would follow
		// before it was told not to, and refused one it could not read.
		if _, perr := req.URL.Parse(loc); perr != nil {
			resp.Body.Close()
			return nil, &url.Error{Op: urlErrorOp(req.Method), URL: stripPassword(req.URL),
				Err: fmt.Errorf("failed to parse Location header %q: %v", loc, perr)}
		}
	}
	return resp, nil
}

// redirects reports whether an http.Client would follow a status answered
// to req: 301, 302 and 303 always, 307 and 308 unless req has a body it
// cannot send again.
func redirects(req *http.Request, status int) bool {
	switch status {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther:
		return true
	case http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		hasBody := req.Body != nil && req.Body != http.NoBody
		return req.GetBody != nil || !hasBody
	}
	return false
}

// urlErrorOp is the Op of a *url.Error for method, as http.Client names it
// ("Post").
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	if lower := strings.ToLower(method); method != lower {
		return method[:1] + lower[1:]
	}
	return method
}

// stripPassword is u as an http.Client's error names it: a password
// replaced by "***".
func stripPassword(u *url.URL) string {
	if _, set := u.User.Password(); set {
		return strings.Replace(u.String(), u.User.String()+"@", u.User.Username()+":***@", 1)
	}
	return u.String()
}
