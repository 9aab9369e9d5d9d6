//go:build !unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
)

// errNotRegular says a path named something other than a regular file.
var errNotRegular = errors.New("not a regular file")

// openNoFollow opens the regular file at path for reading without
// following a symlink (or other reparse point) in its last element: it
// looks at the path itself first, and refuses what it opened unless it is
// the very file it looked at, so a link swapped in between is not followed.
func openNoFollow(path string) (*os.File, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	after, err := f.Stat()
	if err != nil || !os.SameFile(before, after) {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotRegular}
	}
	return f, nil
}
