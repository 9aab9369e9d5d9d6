package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// sidecar is what a daemon records next to its store: where it listens.
type sidecar struct {
	Socket    string `json:"socket"`
	Pid       int    `json:"pid"`
	Version   string `json:"version"`
	Handshake int    `json:"handshake"`
}

func sidecarPath(store string) string { return store + ".daemon" }
func lockPath(store string) string    { return store + ".daemon.lock" }

// LogPath is the daemon's log file for a store.
func LogPath(store string) string { return store + ".daemon.log" }

func readSidecar(store string) (sidecar, error) {
	var sc sidecar
	b, err := os.ReadFile(sidecarPath(store))
	if err != nil {
		return sc, err
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		return sc, fmt.Errorf("%s: %w", sidecarPath(store), err)
	}
	return sc, nil
}

// writeSidecar records sc atomically (a reader sees the old file or the new).
func writeSidecar(store string, sc sidecar) error {
	b, _ := json.Marshal(sc)
	tmp := sidecarPath(store) + "." + randomHex(4)
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, sidecarPath(store))
}

// removeSidecar removes the sidecar if it still names socket (a newer
// daemon may have replaced it).
func removeSidecar(store, socket string) {
	if sc, err := readSidecar(store); err == nil && sc.Socket == socket {
		os.Remove(sidecarPath(store))
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errNoDaemon: no daemon answers for the store.
var errNoDaemon = errors.New("no agent-lsp daemon runs for this store")

// dial connects to the daemon of store, errNoDaemon when none answers.
func dial(store string) (net.Conn, sidecar, error) {
	sc, err := readSidecar(store)
	if err != nil {
		return nil, sc, errNoDaemon
	}
	c, err := net.DialTimeout("unix", sc.Socket, 2*time.Second)
	if err != nil {
		return nil, sc, errNoDaemon
	}
	return c, sc, nil
}

// storeDir makes sure the store's directory exists (0700, as the store's).
func storeDir(store string) error {
	return os.MkdirAll(filepath.Dir(store), 0o700)
}
