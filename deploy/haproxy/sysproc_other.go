//go:build !linux

package haproxy

import "syscall"

// sysProcAttr is the default elsewhere: no parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }
