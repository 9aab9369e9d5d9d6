package sandbox

import (
	"io/fs"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// Unix's open flags have no Windows counterpart here: 0. os.Root still
// keeps links from leading out of the project; a link inside it is
// followed (Windows makes symlinks only for administrators and in
// Developer Mode).
const (
	oNoFollow  = 0
	oDirectory = 0
)

// sessionAttr starts a command in a process group of its own.
func sessionAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// terminate ends the process: Windows has no SIGTERM.
func terminate(cmd *exec.Cmd) error { return cmd.Process.Kill() }

// nlinks is 1: os.Stat does not say on Windows.
func nlinks(fs.FileInfo) uint64 { return 1 }

// inode is 0: os.Stat gives no file index on Windows.
func inode(fs.FileInfo) uint64 { return 0 }
