//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

// keepsFile: without Unix link counts and owners, every file may be replaced.
func keepsFile(fs.FileInfo) string { return "" }

// copyAttrs gives the new file f the mode of the file fi describes.
func copyAttrs(f *os.File, fi fs.FileInfo) error { return f.Chmod(fi.Mode() & fs.ModePerm) }
