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
// daemon may have replaced it), and the lock file's record of it.
func removeSidecar(store, socket string) {
	if sc, err := readSidecar(store); err == nil && sc.Socket == socket {
		os.Remove(sidecarPath(store))
	}
	if sc, err := readRecord(store); err == nil && sc.Socket == socket {
		if f, err := os.OpenFile(lockPath(store), os.O_WRONLY, 0); err == nil {
			f.Truncate(0)
			f.Close()
		}
	}
}

// writeRecord records sc in the store's lock file too: a window that finds
// no sidecar (someone removed it) finds the daemon there. The lock file's
// lock is what starters take; its content is this record, or nothing.
func writeRecord(store string, sc sidecar) error {
	b, _ := json.Marshal(sc)
	f, err := os.OpenFile(lockPath(store), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.Write(b)
	return err
}

// readRecord reads the lock file's record of a daemon.
func readRecord(store string) (sidecar, error) {
	var sc sidecar
	b, err := os.ReadFile(lockPath(store))
	if err != nil {
		return sc, err
	}
	if err := json.Unmarshal(b, &sc); err != nil || sc.Socket == "" {
		return sc, fmt.Errorf("%s records no daemon", lockPath(store))
	}
	return sc, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// errNoDaemon: no daemon answers for the store.
var errNoDaemon = errors.New("no agent-lsp daemon runs for this store")

// ForeignPeerError is a socket named in a store's sidecar that a process of
// another user holds: after a daemon died without removing its sidecar,
// anyone may bind its (abstract) name. It counts as no daemon
// (IsNoDaemon): nothing is written to it.
type ForeignPeerError struct {
	Store, Socket string
	User          string // the peer's user (peerUser: a uid, or a Windows SID)
	PID           int    // the peer's process; -1 when unknown
	Err           error
}

func (e *ForeignPeerError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("no agent-lsp daemon of this user runs for %s: the peer of %s could not be checked (%v); it was not used", e.Store, e.Socket, e.Err)
	}
	return fmt.Sprintf("no agent-lsp daemon of this user runs for %s: %s, which its sidecar names, is held by %s %s (pid %d), not by %s %s; it was sent nothing",
		e.Store, e.Socket, userKind, e.User, e.PID, userKind, thisUser())
}

// Is makes a foreign peer count as no daemon.
func (e *ForeignPeerError) Is(target error) bool { return target == errNoDaemon }

// dial connects to the daemon of store, found by its sidecar, else by the
// lock file's record of it (the sidecar was removed while it runs):
// errNoDaemon when none answers, a *ForeignPeerError (also errNoDaemon)
// when the socket named is another user's, checked before a byte is
// written, and an *UnsafeDirError when the store's directory is writable by
// other users.
func dial(store string) (net.Conn, sidecar, error) {
	var unsafe *UnsafeDirError
	if err := checkDir(filepath.Dir(store)); errors.As(err, &unsafe) {
		return nil, sidecar{}, err
	}
	sc, err := readSidecar(store)
	var c net.Conn
	if err == nil {
		if c, err = dialAt(store, sc); err == nil {
			return c, sc, nil
		}
	} else {
		err = errNoDaemon
	}
	if rec, rerr := readRecord(store); rerr == nil && rec.Socket != sc.Socket {
		c, rerr := dialAt(store, rec)
		if rerr == nil {
			return c, rec, nil
		}
		if err == errNoDaemon {
			err = rerr // a foreign peer there is worth telling
		}
	}
	return nil, sc, err
}

// dialAt connects to the socket sc names and checks who holds it.
func dialAt(store string, sc sidecar) (net.Conn, error) {
	c, err := net.DialTimeout("unix", sc.Socket, 2*time.Second)
	if err != nil {
		return nil, errNoDaemon
	}
	user, pid, err := peerUser(c)
	if err != nil || user != thisUser() {
		c.Close()
		return nil, &ForeignPeerError{Store: store, Socket: sc.Socket, User: user, PID: pid, Err: err}
	}
	return c, nil
}

// UnsafeDirError is a store directory that users other than this one (and
// root) can write: whoever can replace files there could point the sidecar
// at a socket of their own, or take the lock. Such a directory is never
// used for a daemon, and never chmod-ed: agent-lsp did not create it.
type UnsafeDirError struct {
	Dir string
	Why string
}

func (e *UnsafeDirError) Error() string {
	return fmt.Sprintf("the store's directory %s %s: the daemon's sidecar and lock there could be replaced by another user, so no daemon is used for this store; keep the store in a directory only you can write (the default is $XDG_STATE_HOME/agent-lsp)",
		e.Dir, e.Why)
}

// storeDir makes sure the store's directory exists (0700, as the store's)
// and that no other user can write it (checkDir).
func storeDir(store string) error {
	if err := os.MkdirAll(filepath.Dir(store), 0o700); err != nil {
		return err
	}
	return checkDir(filepath.Dir(store))
}
