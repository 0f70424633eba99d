package etcdlocal

import "testing"

// TestFreePortsAreDistinct: every member's peer and client port is its
// own, however the kernel hands ephemeral ports out (two members given
// one port made a dev cluster's etcd refuse to start, "duplicate url").
func TestFreePortsAreDistinct(t *testing.T) {
	for round := range 20 {
		ports, err := freePorts(6)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("round %d: port %d handed out twice in %v", round, p, ports)
			}
			seen[p] = true
		}
	}
}
