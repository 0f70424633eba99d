package exchange

import "net/http"

// Shadow is what the stages tell a shadow-mode request's pipeline about
// the answer they gave: on a shadow endpoint the protocol answers a
// recorder, and the pipeline then decides what the client gets (the
// recorded answer, or the upstream's for a request passed on). nil
// outside shadow mode; its methods do nothing then.
type Shadow struct {
	// Relay is set when the recorded answer is one the client gets as it
	// is: the upstream's own (the protocol executed the request), a
	// redirect to the owner region, or a forward whose answer was lost
	// (504: the owner may have run it, so it is not passed on again).
	// Routing's refusals (a shard moving or failed over, an owner suspect
	// or unreachable) are not: those requests go upstream uncoordinated,
	// so a move or a failover is never an outage on a shadow endpoint.
	Relay bool
	// Client is the request's own writer, and Sent is set once an answer
	// went to it directly: the owner region's answer to a forward is
	// streamed to the client (see Direct), never held whole.
	Client http.ResponseWriter
	Sent   bool
}

// MarkRelay marks the answer as one the client gets as it is.
func (s *Shadow) MarkRelay() {
	if s != nil {
		s.Relay = true
	}
}

// Direct returns where an answer the client gets as it comes goes: w
// outside shadow mode; in shadow mode the client's own writer (the
// protocol's recorder would hold the whole answer), marked sent.
func (s *Shadow) Direct(w http.ResponseWriter) http.ResponseWriter {
	if s == nil {
		return w
	}
	s.Sent = true
	return s.Client
}
