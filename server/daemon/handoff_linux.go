package daemon

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// The handoff: a forwarder whose editor talks to it over pipes or sockets
// passes them to the daemon, which then reads the editor's messages and
// writes its own without the forwarder copying each (SCM_RIGHTS, as an
// OpenSSH multiplexing client passes its standard streams to the master).
// After the Welcome, the forwarder sends 8 bytes (the length of what it
// already read of stdin, little-endian) carrying the two descriptors, stdin
// and stdout, then those bytes. The connection then carries only the
// daemon's end frame; the forwarder's going away ends the editor's
// connection as before.

// handoffs says that this daemon takes an editor's streams from its forwarder.
const handoffs = true

// handoffReady reports whether the forwarder can pass in and out to the
// daemon: both are pipes or sockets (a terminal or a file is forwarded
// instead, so that the daemon never changes a description the user's shell
// shares).
func handoffReady(in io.Reader, out io.Writer) (stdin, stdout *os.File, ok bool) {
	stdin, _ = in.(*os.File)
	stdout, _ = out.(*os.File)
	return stdin, stdout, stdin != nil && stdout != nil && streamFile(stdin) && streamFile(stdout)
}

// streamFile reports whether f is a pipe or a socket.
func streamFile(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// sendStdio passes stdin and stdout over c, then prefix: what was read of
// stdin already.
func sendStdio(c net.Conn, stdin, stdout *os.File, prefix []byte) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("handoff: not a Unix socket")
	}
	var fds []int
	for _, f := range []*os.File{stdin, stdout} {
		raw, err := f.SyscallConn() // not Fd: it would make the descriptor blocking
		if err != nil {
			return err
		}
		if err := raw.Control(func(fd uintptr) { fds = append(fds, int(fd)) }); err != nil {
			return err
		}
	}
	head := binary.LittleEndian.AppendUint64(nil, uint64(len(prefix)))
	// The descriptors stay open while stdin and stdout are (the caller's).
	if _, _, err := uc.WriteMsgUnix(head, unix.UnixRights(fds...), nil); err != nil {
		return fmt.Errorf("pass the editor's stdin and stdout to the daemon: %w", err)
	}
	if len(prefix) == 0 {
		// An empty write is still a write(2): by now the daemon may have
		// served a client that ended at once and closed c (EPIPE).
		return nil
	}
	_, err := c.Write(prefix)
	return err
}

// receiveStdio receives what sendStdio passes over c: the editor's stdin
// (reading first what the forwarder had read of it) and stdout. br, c's
// reader, must hold nothing: the descriptors ride on the next bytes.
// Closing either gives its description back the blocking mode it came
// with.
func receiveStdio(c net.Conn, br *bufio.Reader) (io.ReadCloser, io.WriteCloser, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok || br.Buffered() > 0 {
		return nil, nil, errors.New("handoff: data before the descriptors")
	}
	head := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, flags, _, err := uc.ReadMsgUnix(head, oob)
	if err != nil {
		return nil, nil, fmt.Errorf("handoff: %w", err)
	}
	files, err := stdioFiles(oob[:oobn], flags&unix.MSG_CTRUNC != 0)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (io.ReadCloser, io.WriteCloser, error) {
		files[0].Close()
		files[1].Close()
		return nil, nil, fmt.Errorf("handoff: %w", err)
	}
	if _, err := io.ReadFull(br, head[n:]); err != nil {
		return fail(err)
	}
	// What the forwarder read: a first frame of up to maxFirstFrame, its
	// headers, and what its reader held beyond it.
	size := binary.LittleEndian.Uint64(head)
	if size > maxFirstFrame+maxHeader+128<<10 {
		return fail(fmt.Errorf("%d bytes read before the handoff", size))
	}
	prefix := make([]byte, size)
	if _, err := io.ReadFull(br, prefix); err != nil {
		return fail(err)
	}
	in := struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(prefix), files[0]), files[0]}
	return in, files[1], nil
}

// handedFile is a descriptor a forwarder passed, made non-blocking (so that
// closing it ends a read of it); Close gives the description, which the
// forwarder's process shares, back the mode it came with.
type handedFile struct {
	*os.File
	nonblock bool // the description's mode when it came
}

func (f handedFile) Close() error {
	// Through a duplicate, once the file is closed: a read that began
	// after the mode was set back would block, and Close wait for it.
	dup := -1
	if raw, err := f.SyscallConn(); err == nil {
		raw.Control(func(fd uintptr) { dup, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) })
	}
	err := f.File.Close()
	if dup >= 0 {
		unix.SetNonblock(dup, f.nonblock)
		unix.Close(dup)
	}
	return err
}

// stdioFiles makes files of the two descriptors a control message carries:
// pipes or sockets, as the forwarder checked.
func stdioFiles(oob []byte, truncated bool) ([2]handedFile, error) {
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err == nil {
		for _, m := range msgs {
			rights, err := unix.ParseUnixRights(&m)
			if err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	refuse := func(format string, args ...any) ([2]handedFile, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return [2]handedFile{}, fmt.Errorf("handoff: "+format, args...)
	}
	if truncated || len(fds) != 2 {
		return refuse("%d descriptors passed (cut: %v), want stdin and stdout", len(fds), truncated)
	}
	var files [2]handedFile
	for i, name := range []string{"editor-stdin", "editor-stdout"} {
		var st unix.Stat_t
		if err := unix.Fstat(fds[i], &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO && st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			return refuse("%s is not a pipe or a socket", name)
		}
		flags, err := unix.FcntlInt(uintptr(fds[i]), unix.F_GETFL, 0)
		if err != nil {
			return refuse("%s: %v", name, err)
		}
		files[i].nonblock = flags&unix.O_NONBLOCK != 0
	}
	for i, name := range []string{"editor-stdin", "editor-stdout"} {
		unix.SetNonblock(fds[i], true)
		files[i].File = os.NewFile(uintptr(fds[i]), name)
	}
	return files, nil
}

// keepModes records the blocking mode of files' descriptions and returns
// what sets them back: the forwarder's, after a daemon that took them ended
// without doing so (it died).
func keepModes(files ...*os.File) func() {
	var restore []func()
	for _, f := range files {
		raw, err := f.SyscallConn()
		if err != nil {
			continue
		}
		raw.Control(func(fd uintptr) {
			if flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil {
				nonblock := flags&unix.O_NONBLOCK != 0
				restore = append(restore, func() { raw.Control(func(fd uintptr) { unix.SetNonblock(int(fd), nonblock) }) })
			}
		})
	}
	return func() {
		for _, r := range restore {
			r()
		}
	}
}
