package daemon

import (
	"fmt"
	"net"
	"unsafe"

	"golang.org/x/sys/windows"
)

// userKind names what peerUser returns, in messages.
const userKind = "user"

// thisUser is the user this process runs as: its token's user SID.
func thisUser() string {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "unknown"
	}
	return tu.User.Sid.String()
}

// sioAFUnixGetPeerPID is SIO_AF_UNIX_GETPEERPID (afunix.h):
// _WSAIOR(IOC_VENDOR, 256), the process at the other end of an AF_UNIX
// socket.
const sioAFUnixGetPeerPID = 0x58000100

// peerUser is the user (the token user SID of the process at the other
// end of c, found by SIO_AF_UNIX_GETPEERPID) and that process's id; an
// error when either cannot be learned, which callers treat as a stranger.
func peerUser(c net.Conn) (user string, pid int, err error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return "", -1, fmt.Errorf("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return "", -1, err
	}
	var peer uint32
	var ierr error
	err = raw.Control(func(fd uintptr) {
		var n uint32
		ierr = windows.WSAIoctl(windows.Handle(fd), sioAFUnixGetPeerPID, nil, 0,
			(*byte)(unsafe.Pointer(&peer)), uint32(unsafe.Sizeof(peer)), &n, nil, 0)
	})
	if err == nil {
		err = ierr
	}
	if err != nil {
		return "", -1, fmt.Errorf("the peer's process: %w", err)
	}
	sid, err := processUser(peer)
	return sid, int(peer), err
}

// processUser is the token user SID of process pid.
func processUser(pid uint32) (string, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return "", fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return "", fmt.Errorf("the token of process %d: %w", pid, err)
	}
	defer tok.Close()
	tu, err := tok.GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("the user of process %d: %w", pid, err)
	}
	return tu.User.Sid.String(), nil
}
