//go:build !linux

package cluster

import "syscall"

// childAttr is nil off Linux, which has no parent-death signal: Stop
// kills the processes.
func childAttr() *syscall.SysProcAttr { return nil }
