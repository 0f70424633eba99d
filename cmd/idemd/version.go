package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/internal/buildinfo"
)

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the module version and the commit this binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), "idemd", buildinfo.Read())
			return nil
		},
	}
}
