package cluster

import "github.com/idemcoord/idemcoord/chaos/failpoint"

// Injector returns a failpoint.Injector over c: each fault kind's row in
// failpoint's registry applies it to the capability c implements for it
// (Processes, Links, ...), or reports failpoint.ErrUnsupported.
func Injector(c Cluster) failpoint.Injector { return failpoint.NewInjector(c) }
