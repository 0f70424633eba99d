//go:build !dev

package main

import (
	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/internal/tagbuild"
)

// devBuild is the build of idemd that has `idemd dev`.
var devBuild = tagbuild.Command{Pkg: "./cmd/idemd", Tag: "dev", What: "idemd dev (the local three-region cluster)"}

// devCmd is `idemd dev` in the production build, which does not link the
// dev cluster (embedded etcd, a throwaway PostgreSQL, the demo services):
// it builds idemd with -tags dev from the module source and becomes that
// program, with the same arguments, flags and --help included.
func devCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Run a local three-region cluster on embedded defaults",
		Long: `dev starts, from nothing, a local three-region cluster (see idemd dev --help).
This idemd is the production build, without the dev cluster: dev builds idemd
with -tags dev from the idemcoord module source and runs that instead.`,
		DisableFlagParsing: true, // the dev build parses them, --help too
		RunE: func(cmd *cobra.Command, args []string) error {
			return devBuild.Exec()
		},
	}
}
