package cluster

import "syscall"

// childAttr makes the kernel SIGKILL a region's process when the drill
// that started it dies, however it dies: a killed test binary leaves no
// idemd behind.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
