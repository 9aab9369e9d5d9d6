//go:build unix

package langserver

import (
	"os"
	"os/exec"
	"syscall"
)

// ownGroup makes cmd start in a session of its own: its process group is
// its pid, so killGroup ends what it started too.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// killGroup kills the process group of p, started by ownGroup.
func killGroup(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }
