package daemon

import (
	"net"
	"os"
	"path/filepath"
)

// listen listens on an AF_UNIX socket (Windows 10 1803 and later) in a
// directory only the user (and SYSTEM) may enter:
// %LOCALAPPDATA%\agent-lsp\run, made with an access list of its own. A
// directory there that lets anyone else in is refused, never changed.
// Clients and the daemon still check each other's token user (peerUser).
func listen() (net.Listener, string, error) {
	base, err := os.UserCacheDir() // %LOCALAPPDATA%
	if err != nil {
		base = os.TempDir()
	}
	if err := os.MkdirAll(filepath.Join(base, "agent-lsp"), 0o700); err != nil {
		return nil, "", err
	}
	dir := filepath.Join(base, "agent-lsp", "run")
	if err := userOnlyDir(dir); err != nil {
		return nil, "", err
	}
	name := filepath.Join(dir, randomHex(8)+".sock")
	l, err := net.Listen("unix", name)
	return l, name, err
}
