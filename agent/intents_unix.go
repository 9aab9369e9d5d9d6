//go:build unix

package agent

import "syscall"

// syscallNoFollow opens a spool without following a symlink put in its place.
const syscallNoFollow = syscall.O_NOFOLLOW
