//go:build !linux

package workspace

import "io/fs"

// Lstat is the entry's Info (the file or link itself, not followed).
func (e Entry) Lstat() (fs.FileInfo, error) { return e.Info() }
