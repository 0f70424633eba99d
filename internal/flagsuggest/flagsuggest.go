// Package flagsuggest adds to a cobra command's unknown-flag error the flag
// that was probably meant, as cobra itself does for a misspelt command.
// idemd and idemctl both install it with SetFlagErrorFunc(Suggest).
package flagsuggest

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// maxDistance is the largest edit distance at which a flag is suggested:
// two edits catch a typo or a swapped pair ("--ownr", "--onwer") without
// suggesting an unrelated flag of similar length.
const maxDistance = 2

// Suggest returns err with the command's closest flag name added when err
// is pflag's "unknown flag: --NAME": "unknown flag: --ownr; did you mean
// --owner? (see idemctl shards --help)". A flag within maxDistance edits,
// or one that NAME is a prefix of (or the other way round), is suggested;
// without one the error points at --help. Any other error is returned as
// it is.
func Suggest(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	best, bestD := "", maxDistance+1
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

// Subcommand returns the name of cmd's subcommand that word probably
// meant ("acept" for "accept"): one within maxDistance edits, or one that
// word is a prefix of; "" when none is that close.
func Subcommand(cmd *cobra.Command, word string) string {
	best, bestD := "", maxDistance+1
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		for _, name := range append([]string{c.Name()}, c.Aliases...) {
			d := distance(word, name)
			if word != "" && strings.HasPrefix(name, word) {
				d = min(d, 1)
			}
			if d < bestD {
				best, bestD = c.Name(), d
			}
		}
	}
	return best
}

// UnknownSubcommand is the one-line error for word given to cmd, a
// command that only groups subcommands: it names the subcommand probably
// meant, or points at --help.
func UnknownSubcommand(cmd *cobra.Command, word string) error {
	if s := Subcommand(cmd, word); s != "" {
		return fmt.Errorf("unknown command %q for %q; did you mean %q? (see %s --help)", word, cmd.CommandPath(), s, cmd.CommandPath())
	}
	return fmt.Errorf("unknown command %q for %q (see %s --help)", word, cmd.CommandPath(), cmd.CommandPath())
}

// Groups makes every command under root that only groups subcommands
// (no Run of its own) answer an unknown subcommand with UnknownSubcommand
// instead of cobra's several lines (or, below the root, its help and exit
// status 0), and print its help when given none.
func Groups(root *cobra.Command) {
	if root.HasSubCommands() && root.Run == nil && root.RunE == nil {
		root.Args = cobra.ArbitraryArgs
		root.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return UnknownSubcommand(cmd, args[0])
		}
	}
	for _, c := range root.Commands() {
		Groups(c)
	}
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
