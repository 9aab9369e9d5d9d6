//go:build unix

package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// keepsFile says why the file name in r, which fi describes, must be rewritten in place rather than
// replaced by a new one ("" when it may be replaced): another hard link
// would keep the old content, and a new file would not belong to another
// owner.
func keepsFile(_ *os.Root, _ string, fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if st.Nlink > 1 {
		return fmt.Sprintf("it has %d hard links", st.Nlink)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Sprintf("it belongs to user %d", st.Uid)
	}
	return ""
}

// copyAttrs gives the new file f the mode and group of the file fi
// describes (errKeep when the group cannot be given).
func copyAttrs(f *os.File, fi fs.FileInfo) error {
	if err := f.Chmod(fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)); err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	nfi, err := f.Stat()
	if err != nil {
		return err
	}
	if nst, ok := nfi.Sys().(*syscall.Stat_t); ok && nst.Gid != st.Gid {
		if err := f.Chown(-1, int(st.Gid)); err != nil {
			return errKeep
		}
		// A chown may clear the set-id bits: give the mode again.
		return f.Chmod(fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky))
	}
	return nil
}
