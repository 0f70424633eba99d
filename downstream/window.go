package downstream

import (
	"fmt"
	"strings"
	"time"
)

// Passed reports whether an operation first attempted at first is past a
// window of the given length at now. Both times must come from one clock,
// the store's (the record's created_at and the claim's statement time):
// a client's clock or a gateway's says nothing about how long the
// provider has kept its key. A zero window never passes (no guard), and
// the window's last instant is already past it: the provider may prune a
// key exactly at the window's end.
func Passed(first, now time.Time, window time.Duration) bool {
	return window > 0 && !first.IsZero() && !now.Before(first.Add(window))
}

// Check validates a window against the endpoint's lease and ttl, the way
// config reports it: an error when the window is negative or shorter
// than the lease (an attempt still running normally would be past it, so
// every takeover of a crashed worker would be refused), and a note (not
// an error) when it is longer than ttl: the key is forgotten before the
// window ends, so a retry after ttl is a new intent (a first run with a
// new operation id) and the guard never sees it.
func Check(window, lease, ttl time.Duration) (note string, err error) {
	switch {
	case window < 0:
		return "", fmt.Errorf("must be positive (or unset for no guard), got %s", short(window))
	case window == 0:
		return "", nil
	case window < lease:
		return "", fmt.Errorf("%s is shorter than lease %s: an attempt still within its lease would be past the "+
			"provider's window; set it to the provider's key retention (e.g. 24h), at least lease", short(window), short(lease))
	case ttl > 0 && window > ttl:
		return fmt.Sprintf("%s is longer than ttl %s: the key is forgotten after ttl, so a retry after it "+
			"starts a new operation the window does not cover; only retries within ttl are guarded", short(window), short(ttl)), nil
	}
	return "", nil
}

// short writes d as an operator wrote it: 24h, not 24h0m0s.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
