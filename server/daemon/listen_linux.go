package daemon

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// listen listens on a new abstract Unix socket under a random name: it has
// no file to protect, vanishes with the process, and Landlock's scope rule
// (ABI 6) keeps sandboxed commands from connecting to it. Anyone may bind
// an abstract name that is free, so clients check who holds it (peerCred).
func listen() (net.Listener, string, error) {
	name := fmt.Sprintf("@agent-lsp-%d-%s", os.Getuid(), randomHex(8))
	l, err := net.Listen("unix", name)
	return l, name, err
}

// peerCred is the user and process at the other end of c (SO_PEERCRED),
// -1 when unknown.
func peerCred(c net.Conn) (uid, pid int, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, -1, fmt.Errorf("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return -1, -1, err
	}
	if cerr != nil {
		return -1, -1, cerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}
