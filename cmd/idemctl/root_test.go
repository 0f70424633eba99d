package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/cmd/idemctl/internal/drillcmd"
)

// rootCmd is the drill build's command tree, for the tests that run
// idemctl in process: the production build's drill execs another
// program (TestDrillRunChecksItsOutputsBeforeStarting runs that one).
func rootCmd() *cobra.Command {
	return newRoot(drillcmd.Command(drillcmd.Output{AddFlag: addOutputFlag, Check: checkOutput, JSON: outputJSON,
		Render: func(w io.Writer, format string, v any) error { return render(w, format, table{v: v}) }}))
}
