package devcmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/idemcoord/idemcoord/devcluster"
	"github.com/idemcoord/idemcoord/internal/patronilocal"
)

// printStoreMembers prints the Patroni clusters of a --store ha cluster,
// one line per member with its role as Patroni reports it now.
func printStoreMembers(ctx context.Context, w io.Writer, st devcluster.State) {
	fmt.Fprintln(w, "Store: one Patroni cluster per home region (quorum commit: ANY 1 of the other regions' members):")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  CLUSTER\tMEMBER\tREGION\tROLE\tADDRESS\tREST")
	for _, sc := range st.StoreClusters {
		roles := map[string]string{}
		if ms, err := patronilocal.ReadStatus(ctx, sc.REST); err == nil {
			for _, m := range ms {
				roles[m.Name] = m.Role
			}
		}
		for _, m := range sc.Members {
			role := roles[m.Name]
			if role == "" {
				role = "unknown"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", sc.Name, m.Name, m.Region, role, m.Addr, m.REST)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\nEach region's config names every cluster (store.backend: patroni): a shard's records\n"+
		"and fence live in its home region's cluster. Watch the members:\n\n"+
		"  go run ./cmd/idemctl --port-base %d store status\n\n", st.PortBase)
}
