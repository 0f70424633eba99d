package config

import "github.com/idemcoord/idemcoord/downstream"

// checkDownstreamWindow validates an endpoint's downstream_window, reported
// under at: positive and at least the lease (downstream.Check).
func (e Endpoint) checkDownstreamWindow(p *problems, at string) {
	if _, err := downstream.Check(e.DownstreamWindow, e.Lease, e.TTL); err != nil {
		p.add(at+".downstream_window", "%v", err)
	}
}

// DownstreamWindowNote explains a valid downstream_window that may not do
// what its operator expects, or returns "": one longer than ttl guards
// only the retries within ttl (after ttl the key is forgotten and a retry
// is a new operation). idemd logs it at start.
func (e Endpoint) DownstreamWindowNote() string {
	note, err := downstream.Check(e.DownstreamWindow, e.Lease, e.TTL)
	if err != nil {
		return ""
	}
	return note
}
