//go:build !linux

package daemon

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// listen listens on a socket file in a directory only the user can enter:
// $XDG_RUNTIME_DIR/agent-lsp, else one in the temporary directory.
func listen() (net.Listener, string, error) {
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, fmt.Sprintf("agent-lsp-%d", os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, "", err
	}
	name := filepath.Join(dir, randomHex(8)+".sock")
	l, err := net.Listen("unix", name)
	return l, name, err
}

// peerUID: the socket's directory admits only the user.
func peerUID(net.Conn) (int, error) { return os.Getuid(), nil }
