package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Output formats of --output.
const (
	outputTable = "table"
	outputJSON  = "json"
)

// addOutputFlag registers --output on cmd.
func addOutputFlag(cmd *cobra.Command, format *string) {
	cmd.Flags().StringVarP(format, "output", "o", outputTable, "output format: table or json")
}

// checkOutput rejects an unknown --output value before any work is done.
func checkOutput(format string) error {
	switch format {
	case outputTable, outputJSON:
		return nil
	}
	return fmt.Errorf("--output: must be %q or %q, got %q", outputTable, outputJSON, format)
}

// table is what a command prints: a header and rows for people, and v (any
// JSON-encodable value) for scripts.
type table struct {
	header []string
	rows   [][]string
	v      any
}

// render writes t in format.
func render(w io.Writer, format string, t table) error {
	if format == outputJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(t.v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	writeRow(tw, t.header)
	for _, r := range t.rows {
		writeRow(tw, r)
	}
	return tw.Flush()
}

func writeRow(w io.Writer, cols []string) {
	for i, c := range cols {
		if i > 0 {
			io.WriteString(w, "\t")
		}
		io.WriteString(w, c)
	}
	io.WriteString(w, "\n")
}

// count is n and noun, the noun in the plural unless n is 1: "1 batch",
// "3 batches", "0 operations".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// oneArg accepts exactly one positional argument, and otherwise names it
// (what: "REGION, the region to fail over") instead of cobra's "accepts 1
// arg(s), received 0".
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return fmt.Errorf("%s needs %s (see %s --help)", cmd.CommandPath(), what, cmd.CommandPath())
		case len(args) > 1:
			return fmt.Errorf("%s takes one argument, %s; got %d: %q", cmd.CommandPath(), what, len(args), args)
		}
		return nil
	}
}
