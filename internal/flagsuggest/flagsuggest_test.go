package flagsuggest

import (
	"io"
	"testing"

	"github.com/spf13/cobra"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"owner", "owner", 0}, {"ownr", "owner", 1}, {"onwer", "owner", 2}, {"", "abc", 3}, {"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := distance(tt.a, tt.b); got != tt.want {
			t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

// TestAMistypedSubcommandIsNamedOnOneLine: a misspelt subcommand of a
// group, at the root or below it, fails with one line naming the
// subcommand meant (not cobra's several lines, nor the group's help with
// exit status 0); a word close to none points at --help.
func TestAMistypedSubcommandIsNamedOnOneLine(t *testing.T) {
	newRoot := func() *cobra.Command {
		root := &cobra.Command{Use: "idemctl", SilenceErrors: true, SilenceUsage: true}
		op := &cobra.Command{Use: "op"}
		noop := func(*cobra.Command, []string) error { return nil }
		op.AddCommand(&cobra.Command{Use: "list", RunE: noop}, &cobra.Command{Use: "reconcile", RunE: noop})
		root.AddCommand(op, &cobra.Command{Use: "regions", RunE: noop})
		Groups(root)
		root.SetOut(io.Discard)
		return root
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"regoins"}, `unknown command "regoins" for "idemctl"; did you mean "regions"? (see idemctl --help)`},
		{[]string{"op", "lst"}, `unknown command "lst" for "idemctl op"; did you mean "list"? (see idemctl op --help)`},
		{[]string{"op", "rec"}, `unknown command "rec" for "idemctl op"; did you mean "reconcile"? (see idemctl op --help)`},
		{[]string{"op", "zzzzzz"}, `unknown command "zzzzzz" for "idemctl op" (see idemctl op --help)`},
		{[]string{"op"}, ""},
	}
	for _, tt := range tests {
		root := newRoot()
		root.SetArgs(tt.args)
		err := root.Execute()
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
		}
	}
}
