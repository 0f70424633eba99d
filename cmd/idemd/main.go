// Command idemd is idemcoord's per-region daemon: an HTTP gateway that
// coordinates idempotency keys in front of an upstream API.
//
//	idemd run --config idemd.yaml     serve one region
//	idemd check-config idemd.yaml     report every configuration error
//	idemd dev                         a local three-region cluster, from nothing
//
// The production build leaves out the dev cluster, which links the test
// rigs (embedded etcd server, a throwaway PostgreSQL, the demo services):
// `idemd dev` is in the build made with -tags dev, and the production
// build's dev builds that one from the module source and execs it
// (internal/tagbuild), so `go run ./cmd/idemd dev` works from a checkout.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/internal/flagsuggest"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "idemd:", err)
		os.Exit(1)
	}
}

// rootCmd is idemd's command tree, with this build's `idemd dev`.
func rootCmd() *cobra.Command { return newRoot(devCmd()) }

// newRoot is idemd's command tree with dev as `idemd dev`.
func newRoot(dev *cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "idemd",
		Short: "Multi-region coordinator for API idempotency keys",
		Long: `idemd stands in front of an HTTP API in each region and makes every
retry of one business intent (same Idempotency-Key) run at most once, whichever
region it lands in, and answer with the result of that one run.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// A misspelt flag gets the one probably meant, as idemctl's do.
	root.SetFlagErrorFunc(flagsuggest.Suggest)
	root.AddCommand(runCmd(), checkConfigCmd(), dev, versionCmd())
	// A misspelt command, one line naming the one probably meant.
	flagsuggest.Groups(root)
	return root
}

// newLogger returns a JSON or text logger on stderr.
func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: must be debug, info, warn or error, got %q", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format: must be json or text, got %q", format)
}
