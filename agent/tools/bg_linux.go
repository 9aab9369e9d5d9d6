//go:build linux

package tools

import (
	"os/exec"
	"syscall"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

// dieWithServer makes the process cmd starts end when the thread that
// starts it ends (PR_SET_PDEATHSIG; the caller keeps that thread locked
// while the process runs), so a crashed or killed server leaves no
// background process: a namespace's init is killed (the kernel ends the
// rest), the snapshot reaper is asked to end (it kills what it started).
func dieWithServer(cmd *exec.Cmd, iso sandbox.Isolation) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if iso == sandbox.Snapshot {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	}
}
