//go:build !drill

package main

import (
	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/internal/tagbuild"
)

// drillBuild is the build of idemctl that has `idemctl drill`.
var drillBuild = tagbuild.Command{Pkg: "./cmd/idemctl", Tag: "drill", What: "idemctl drill (chaos drills)"}

// drillCmd is `idemctl drill` in the production build, which does not
// link the drill harness (toxiproxy, the cluster rigs, the demo
// services): it builds idemctl with -tags drill from the module source
// and becomes that program, with the same arguments, --help included.
func drillCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "drill",
		Short: "Run chaos drills against a throwaway cluster",
		Long: `drill runs chaos drills (see idemctl drill run --help). This idemctl is the
production build, without the drill harness: drill builds idemctl with -tags
drill from the idemcoord module source and runs that instead.`,
		DisableFlagParsing: true, // the drill build parses them, --help too
		RunE: func(cmd *cobra.Command, args []string) error {
			return drillBuild.Exec()
		},
	}
}
