//go:build unix && !linux

package daemon

import "syscall"

// detached is how the daemon is started: in a session of its own, which
// has no controlling terminal. (A process that does not lead its session
// cannot give its terminal up on every system: FreeBSD refuses.)
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
