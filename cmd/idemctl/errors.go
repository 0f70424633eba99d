package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"

	"github.com/spf13/cobra"
)

// printError prints a command's error on w: one "idemctl: ..." line, or
// under -o json a JSON object {"error": "..."} that scripts can parse as
// they parse the command's output.
func printError(w io.Writer, cmd *cobra.Command, err error) {
	msg := packagePrefix.ReplaceAllString(err.Error(), "")
	if cmd != nil {
		if f := cmd.Flags().Lookup("output"); f != nil && f.Value.String() == outputJSON {
			b, _ := json.Marshal(map[string]string{"error": msg})
			fmt.Fprintln(w, string(b))
			return
		}
	}
	fmt.Fprintln(w, "idemctl:", msg)
}

// packagePrefix matches the Go package prefixes of library errors
// ("store: ", "sqlstore: ", "failover: "): the operator reads idemctl's words, not the
// packages' names (the errors keep them for errors.Is and for logs).
var packagePrefix = regexp.MustCompile(`\b(store|sqlstore|crdb|failover|ownership|idempotency|fencing): `)
