package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
// ("crdb: ", "failover: "): the operator reads idemctl's words, not the
// packages' names (the errors keep them for errors.Is and for logs).
var packagePrefix = regexp.MustCompile(`\b(crdb|failover|ownership|idempotency|fencing): `)

// suggestFlag adds to an unknown flag's error the command's closest flag
// name, as cobra does for commands.
func suggestFlag(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	best, bestD := "", 3 // suggest within two edits, or a prefix
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		d := distance(name, f.Name)
		if strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return fmt.Errorf("%s (see %s --help)", msg, cmd.CommandPath())
	}
	return fmt.Errorf("%s; did you mean --%s? (see %s --help)", msg, best, cmd.CommandPath())
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
