package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/ownership"
)

// TestHelpStatesEachDefaultOnceAndTruly: no flag's help names its default
// twice (pflag adds (default ...) itself), --output says what table means
// where it is not a table, and regions' help gives the liveness lease's
// real default.
func TestHelpStatesEachDefaultOnceAndTruly(t *testing.T) {
	t.Setenv("USER", "alice")
	root := rootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, line := range strings.Split(c.LocalFlags().FlagUsages(), "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("%s: flag help names its default twice: %s", c.CommandPath(), strings.TrimSpace(line))
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)

	for _, path := range [][]string{{"openapi"}, {"deploy", "cockroach-sql"}} {
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if u := c.Flags().Lookup("output").Usage; !strings.Contains(u, "table (the") {
			t.Errorf("%s --output help %q does not say what table prints", c.CommandPath(), u)
		}
	}
	c, _, err := root.Find([]string{"regions"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(ownership.DefaultLivenessTTL.String(), "s") + " s by default"
	if !strings.Contains(c.Long, want) {
		t.Errorf("regions help does not give the liveness TTL's default (%q):\n%s", want, c.Long)
	}
}
