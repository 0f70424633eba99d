package exchange

import (
	"errors"
	"net/http"
	"strings"

	"github.com/idemcoord/idemcoord/authn"
)

// WriteUnauthorized answers 401 to a request whose token Verify refused
// (err), on every route: the problem's detail says what is wrong with the
// token (authn.Reason: which check failed, never the token), and the
// WWW-Authenticate challenge is RFC 6750's, with error="invalid_token" and
// the same description when a token was presented. Nothing was executed.
func WriteUnauthorized(w http.ResponseWriter, err error) {
	reason := authn.Reason(err)
	challenge := `Bearer realm="idemcoord"`
	if !errors.Is(err, authn.ErrNoToken) {
		// RFC 6750 section 3: error_description is %x20-21 / %x23-5B / %x5D-7E.
		desc := strings.Map(func(r rune) rune {
			if r == '"' || r == '\\' || r < 0x20 || r > 0x7e {
				return '\''
			}
			return r
		}, reason)
		challenge += `, error="invalid_token", error_description="` + desc + `"`
	}
	w.Header().Set("WWW-Authenticate", challenge)
	WriteProblem(w, Problem{Type: "unauthorized", Title: "missing or invalid bearer token",
		Detail: reason, Status: http.StatusUnauthorized, NewKeySafe: true}, 0)
}
