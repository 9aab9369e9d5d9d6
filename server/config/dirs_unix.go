//go:build !windows

package config

import (
	"os"
	"syscall"
)

// platformStateDir is where the platform keeps a user's application state
// when XDG_STATE_HOME does not say: "" here (~/.local/state follows).
func platformStateDir(func(string) string) string { return "" }

// privateDir reports whether dir is this user's own directory of mode 0700.
func privateDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
