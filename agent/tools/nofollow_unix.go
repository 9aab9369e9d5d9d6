//go:build unix

package tools

import "syscall"

// oNoFollow opens a file without following a symlink put in its place.
const oNoFollow = syscall.O_NOFOLLOW
