package exchange

import "strings"

// errorPrefixes are the package prefixes ("idempotency: ", "sqlstore: ") that
// Go errors carry by house style (STYLE.md rule 3). They name a package of
// this server, which means nothing to a client, so clientText drops them
// from every problem detail. TestErrorPrefixesCoverGatewayImports keeps the
// list in step with the packages the gateway imports; the standard
// library's are those whose errors reach a detail through a body check.
var errorPrefixes = []string{
	// This module's packages whose errors can reach the gateway.
	"authn", "clock", "config", "sqlstore", "store", "daemon", "failover", "fencing",
	"exchange", "gateway", "idempotency", "ownership", "policy", "region", "shard",
	// The standard library's, met while checking a body.
	"json", "mime", "multipart",
}

// clientText returns s, an error's text or a detail built from one, without
// the package prefixes of errorPrefixes: at its start and after each ": "
// that joins a wrapping error to its cause. "idempotency: key contains a
// character outside visible ASCII: at byte 4" becomes "key contains a
// character outside visible ASCII: at byte 4". Other "word: " prefixes (a
// query parameter's name, "wait: ...") are the client's own words and stay.
func clientText(s string) string {
	var b strings.Builder
	for {
		s = dropPrefixes(s)
		i := strings.Index(s, ": ")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+2])
		s = s[i+2:]
	}
}

// dropPrefixes drops every package prefix at the start of s.
func dropPrefixes(s string) string {
	for {
		rest, ok := cutPrefix(s)
		if !ok {
			return s
		}
		s = rest
	}
}

// cutPrefix drops one package prefix at the start of s, if s has one.
func cutPrefix(s string) (string, bool) {
	for _, p := range errorPrefixes {
		if rest, ok := strings.CutPrefix(s, p+": "); ok {
			return rest, true
		}
	}
	return s, false
}
