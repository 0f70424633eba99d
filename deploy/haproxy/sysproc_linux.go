package haproxy

import "syscall"

// sysProcAttr ends haproxy with its parent: a test binary or dev cluster
// that is itself killed leaves no haproxy behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
