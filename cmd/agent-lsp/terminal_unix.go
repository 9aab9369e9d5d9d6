//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// leaveTerminal gives up the process's controlling terminal, if it has one,
// without leaving its session: the daemon an editor in a terminal starts
// inherits that terminal, and what it runs (commands, MCP servers) must not
// prompt on the editor's screen nor stop reading from it. Signals the
// terminal sends its foreground group (Ctrl-C) are not affected, and
// neither is the daemon's scheduling group, which follows the session.
func leaveTerminal() error {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil // no controlling terminal
	}
	defer f.Close()
	return unix.IoctlSetInt(int(f.Fd()), unix.TIOCNOTTY, 0)
}
