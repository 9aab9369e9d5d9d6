package daemon

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// listen listens on a new abstract Unix socket: it has no file to protect,
// vanishes with the process, and Landlock's scope rule (ABI 6) keeps
// sandboxed commands from connecting to it.
func listen() (net.Listener, string, error) {
	name := fmt.Sprintf("@agent-lsp-%d-%s", os.Getuid(), randomHex(8))
	l, err := net.Listen("unix", name)
	return l, name, err
}

// peerUID is the user of the process at the other end of c (SO_PEERCRED).
func peerUID(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}
