//go:build unix

package workspace

import (
	"io/fs"
	"os"
	"syscall"
)

// linkCount is the number of hard links of the file at path, which fi
// (its Lstat) describes.
func linkCount(_ string, fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 1
}

// openNoFollow opens the file at path for reading without following a
// symlink in its last element and without blocking on a FIFO.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
}
