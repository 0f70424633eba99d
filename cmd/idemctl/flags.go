package main

import (
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemcoord/idemcoord/devcluster/devstate"
)

// devPortBase is the root --port-base: which running dev cluster a command
// talks to when it is not given a store or etcd address. 0 means the only
// one running.
var devPortBase int

// devState returns the state of the dev cluster --port-base names, or of
// the only one running.
func devState() (devstate.State, error) {
	return devstate.Find(devPortBase)
}

// auditFlags say who does a repair and why; both go into repair_audit.
type auditFlags struct {
	operator, reason string
}

// add registers --operator and --reason, with reasonHelp as the help of
// --reason.
func (f *auditFlags) add(cmd *cobra.Command, reasonHelp string) {
	def := whoami()
	help := "who is doing this, recorded in the audit"
	if def == "" {
		help = "who is doing this, recorded in the audit (required: $USER is empty)"
	}
	cmd.Flags().StringVar(&f.operator, "operator", def, help)
	if def != "" {
		// The help says where the default comes from, once: (default "$USER").
		cmd.Flags().Lookup("operator").DefValue = "$USER"
	}
	cmd.Flags().StringVar(&f.reason, "reason", "", reasonHelp)
}

// checkRepair names the flag a repair is missing, before anything is
// opened or changed.
func (f *auditFlags) checkRepair() error {
	var missing []string
	if strings.TrimSpace(f.operator) == "" {
		missing = append(missing, "--operator NAME (who is doing it; $USER is empty)")
	}
	if strings.TrimSpace(f.reason) == "" {
		missing = append(missing, "--reason TEXT (why, e.g. a ticket)")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: every repair is recorded in repair_audit with who did it and why", strings.Join(missing, " and "))
	}
	return nil
}

// forRead returns the operator and reason recorded for a read: a read needs
// no reason, and is still recorded as an access by someone.
func (f *auditFlags) forRead() (operator, reason string) {
	operator, reason = strings.TrimSpace(f.operator), strings.TrimSpace(f.reason)
	if operator == "" {
		operator = fmt.Sprintf("uid %d", os.Getuid())
	}
	if reason == "" {
		reason = "read (no reason given)"
	}
	return operator, reason
}

// whoami is the operator's default name: $USER, else the account name, else
// empty (the repair then asks for --operator).
func whoami() string {
	if u := os.Getenv("USER"); strings.TrimSpace(u) != "" {
		return u
	}
	if u, err := user.Current(); err == nil && strings.TrimSpace(u.Username) != "" {
		return u.Username
	}
	return ""
}
