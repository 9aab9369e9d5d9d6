package daemon

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// detached is how the daemon is started on Windows: without a console
// (DETACHED_PROCESS) and in a process group of its own, so the console's
// Ctrl-C and Ctrl-Break of the window that started it do not reach it.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.DETACHED_PROCESS | windows.CREATE_NEW_PROCESS_GROUP}
}
