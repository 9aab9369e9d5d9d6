package hooks

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// ownGroup starts cmd in a process group of its own; cancelling it kills
// the command (not what it started: hooks run /bin/sh, which Windows has
// only under a Unix layer that manages its own children).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
	cmd.Cancel = func() error { return cmd.Process.Kill() }
}

// killGroup does nothing more on Windows: the command has ended.
func killGroup(*exec.Cmd) {}
