//go:build unix

package daemon

import (
	"fmt"
	"os"
	"syscall"
)

// checkDir returns an *UnsafeDirError when a user other than this one and
// root can write dir: it belongs to another user, or it is writable by
// others, or by a group other than the user's own (a user's private
// group, Debian's default, is the user).
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) != os.Getuid() && st.Uid != 0:
		return &UnsafeDirError{dir, fmt.Sprintf("belongs to uid %d", st.Uid)}
	case perm&0o002 != 0:
		return &UnsafeDirError{dir, fmt.Sprintf("is writable by every user (mode %04o)", st.Mode&0o7777)}
	case perm&0o020 != 0 && int(st.Gid) != os.Getgid():
		return &UnsafeDirError{dir, fmt.Sprintf("is writable by group %d (mode %04o)", st.Gid, st.Mode&0o7777)}
	}
	return nil
}
