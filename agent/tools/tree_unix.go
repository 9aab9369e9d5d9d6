//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// tree is the process tree of a command: on Unix its session, whose
// process group is the command's pid.
type tree struct{ cmd *exec.Cmd }

// newTree makes cmd start in a session of its own (its process group is its
// pid, killed whole, and it has no controlling terminal to prompt on), and
// cancelling it kill the whole group.
func newTree(cmd *exec.Cmd) *tree {
	t := &tree{cmd}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return t
}

// adoptTree is the tree of a command whose start and cancellation another
// set up (the sandbox's): its process group.
func adoptTree(cmd *exec.Cmd) *tree { return &tree{cmd} }

// run runs the command and waits for it.
func (t *tree) run() error { return t.cmd.Run() }

// start starts the command; wait waits for it.
func (t *tree) start() error { return t.cmd.Start() }
func (t *tree) wait() error  { return t.cmd.Wait() }

// kill kills what the command left running in the background.
func (t *tree) kill() {
	if t.cmd.Process != nil {
		syscall.Kill(-t.cmd.Process.Pid, syscall.SIGKILL)
	}
}
