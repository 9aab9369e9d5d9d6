//go:build unix

package workspace

import (
	"io/fs"
	"syscall"
)

// linkCount is the number of hard links of the file fi describes.
func linkCount(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 1
}
