//go:build unix && !linux

package daemon

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// listen listens on a socket file in a directory only the user can enter:
// $XDG_RUNTIME_DIR/agent-lsp-UID, else one in the temporary directory. A
// directory of that name that is not the user's alone (made by someone
// else first) is refused, never chmod-ed.
func listen() (net.Listener, string, error) {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, fmt.Sprintf("agent-lsp-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return nil, "", err
	}
	if fi, err := os.Lstat(dir); err != nil {
		return nil, "", err
	} else if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return nil, "", &UnsafeDirError{dir, fmt.Sprintf("is not a directory of mode 0700 (%s)", fi.Mode())}
	}
	if err := checkDir(dir); err != nil {
		return nil, "", err
	}
	name := filepath.Join(dir, randomHex(8)+".sock")
	l, err := net.Listen("unix", name)
	return l, name, err
}
