//go:build !drill

package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/idemcoord/idemcoord/config"
	"github.com/idemcoord/idemcoord/daemon"
)

// errNotDrillBuild is why a normal build refuses the drill environment.
var errNotDrillBuild = errors.New("this idemd was built without -tags drill")

// startDrill refuses to start when the drill environment is set: this
// build has no crash points, no control API and no unsafe mode. It
// changes nothing otherwise.
func startDrill(cfg *config.Config, opts *daemon.Options, log *slog.Logger) (stop func(), err error) {
	for _, env := range []string{envDrillControl, envDrillUnsafe} {
		if os.Getenv(env) != "" {
			return nil, fmt.Errorf("%s is set but %w", env, errNotDrillBuild)
		}
	}
	return func() {}, nil
}
