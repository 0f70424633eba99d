//go:build drill

package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/cmd/idemctl/internal/drillcmd"
)

// drillCmd is `idemctl drill` itself: the drill build links the harness.
func drillCmd() *cobra.Command { return drillcmd.Command(drillOutput) }

// drillOutput is idemctl's --output, for drillcmd.
var drillOutput = drillcmd.Output{AddFlag: addOutputFlag, Check: checkOutput, JSON: outputJSON,
	Render: func(w io.Writer, format string, v any) error { return render(w, format, table{v: v}) }}
