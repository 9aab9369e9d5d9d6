//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// leaveTerminal gives up the process's controlling terminal, if it has one,
// without leaving its session: agent-lsp started by an editor in a terminal
// (and the daemon that editor starts, on Linux) inherits that terminal, and
// what it runs (MCP servers; commands run in sessions of their own) must not
// prompt on the editor's screen or stop, as a background job does, when it
// reads from it. Signals the terminal sends its foreground group (Ctrl-C)
// still arrive, and the session (with Linux's autogroups, the process's
// scheduling group) is kept. It fails where the system lets only a session
// leader give its terminal up (FreeBSD).
//
// A session leader keeps its terminal: giving it up would hang up the
// terminal's foreground group. (Neovim starts its servers as leaders of
// sessions without a terminal; a leader with one was started so on purpose:
// `xterm -e`, `ssh -t`.)
func leaveTerminal() error {
	if sid, err := unix.Getsid(0); err == nil && sid == os.Getpid() {
		return nil
	}
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil // no controlling terminal
	}
	defer f.Close()
	return unix.IoctlSetInt(int(f.Fd()), unix.TIOCNOTTY, 0)
}
