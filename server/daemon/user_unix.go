//go:build unix

package daemon

import (
	"net"
	"os"
	"strconv"
)

// userKind names what peerUser returns, in messages.
const userKind = "uid"

// thisUser is the user this process runs as: its uid.
func thisUser() string { return strconv.Itoa(os.Getuid()) }

// peerUser is the user (uid) and process at the other end of c; the pid is
// -1 when unknown.
func peerUser(c net.Conn) (user string, pid int, err error) {
	uid, pid, err := peerCred(c)
	return strconv.Itoa(uid), pid, err
}
