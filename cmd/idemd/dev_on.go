//go:build dev

package main

import (
	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/cmd/idemd/internal/devcmd"
)

// devCmd is `idemd dev` itself: the dev build links the dev cluster.
func devCmd() *cobra.Command { return devcmd.Command(newLogger) }
