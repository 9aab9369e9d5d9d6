//go:build !unix

package workspace

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// keepsFile says why the file name in r, which fi describes, must be
// rewritten in place rather than replaced by a new one ("" when it may be
// replaced): another hard link would keep the old content. Owners are not
// compared: a new file in the folder inherits its ACL.
func keepsFile(r *os.Root, name string, fi fs.FileInfo) string {
	if n := linkCount(filepath.Join(r.Name(), name), fi); n > 1 {
		return fmt.Sprintf("it has %d hard links", n)
	}
	return ""
}

// copyAttrs gives the new file f the mode of the file fi describes.
func copyAttrs(f *os.File, fi fs.FileInfo) error { return f.Chmod(fi.Mode() & fs.ModePerm) }
