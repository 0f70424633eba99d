//go:build !unix

package tagbuild

import (
	"context"
	"errors"
	"fmt"
)

// errNoExec is why a tagged build cannot replace this process here.
var errNoExec = errors.New("this system cannot replace a running process (exec)")

// Exec fails on this system: see the error for the command to run.
func (c Command) Exec() error { return c.notBuilt(errNoExec) }

// Build fails on this system.
func (c Command) Build() (string, error) { return "", fmt.Errorf("%s: %w", c.Pkg, errNoExec) }

// BuildFrom fails on this system.
func (c Command) BuildFrom(context.Context, string) (string, error) {
	return "", fmt.Errorf("%s: %w", c.Pkg, errNoExec)
}
