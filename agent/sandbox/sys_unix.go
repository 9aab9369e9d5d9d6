//go:build unix

package sandbox

import (
	"io/fs"
	"os/exec"
	"syscall"
)

// Open flags that are Unix's alone.
const (
	oNoFollow  = syscall.O_NOFOLLOW
	oDirectory = syscall.O_DIRECTORY
)

// sessionAttr starts a command in a session of its own.
func sessionAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// terminate asks the process to end (SIGTERM).
func terminate(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGTERM) }

// nlinks is the number of hard links of the file fi describes; 1 where
// the system does not say.
func nlinks(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// inode is fi's inode number (0 where the system has none).
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
