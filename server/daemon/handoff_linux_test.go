package daemon

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pipe is a blocking pipe, as an editor gives a server (os.Pipe's are
// non-blocking).
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	raw.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// The daemon makes the streams it takes non-blocking, and gives them back
// their blocking mode when the connection ends: the forwarder's process,
// and any other sharing them, finds them as they were.
func TestHandoffRestoresBlockingMode(t *testing.T) {
	_, store, _ := openTestDaemon(t)
	f := testForwarder(store)
	serverIn, editorOut := pipe(t)
	editorIn, serverOut := pipe(t)
	code := make(chan int, 1)
	go func() { code <- f.Forward(context.Background(), serverIn, serverOut) }()
	conn := editorConn(editorIn, editorOut)
	defer conn.Close()
	lspCall(t, conn, "initialize", map[string]any{"processId": nil, "capabilities": map[string]any{}})
	if !nonblocking(t, serverIn) || !nonblocking(t, serverOut) {
		t.Fatal("the streams handed over are blocking while the daemon serves them")
	}
	lspCall(t, conn, "shutdown", nil)
	conn.Notify(context.Background(), "exit", nil)
	if c := waitCode(t, code); c != 0 {
		t.Fatalf("exit code %d", c)
	}
	if nonblocking(t, serverIn) || nonblocking(t, serverOut) {
		t.Error("the streams stayed non-blocking after the connection ended")
	}
	serverOut.Close() // as the forwarder's process exits: the editor reads the end
}

// A forwarder that says it passes the editor's streams and then does not
// (hung, or stopped) holds up neither the daemon's closing nor its store.
func TestHandoffNeverSent(t *testing.T) {
	d, store, logged := openTestDaemon(t)
	s, err := Dial(store, Hello{Op: opServe, Fds: true, Args: []string{"-store=" + store}})
	if err != nil || !s.Welcome.Fds {
		t.Fatalf("dial: %v %+v", err, s)
	}
	defer s.Conn.Close()
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second): // it should be at once
		t.Fatalf("the daemon did not close while a handoff was awaited\n%s", logged())
	}
}

// What a peer passes is checked: two descriptors, each a pipe or a socket;
// anything else ends the connection, with the reason in the log.
func TestHandoffRefusesOtherDescriptors(t *testing.T) {
	_, store, logged := openTestDaemon(t)
	file, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w := pipe(t)
	for _, tc := range []struct {
		name  string
		files []*os.File
		want  string
	}{
		{"a regular file", []*os.File{file, w}, "editor-stdin is not a pipe or a socket"},
		{"three", []*os.File{r, w, w}, "descriptors passed (cut: true)"},
		{"one", []*os.File{r}, "1 descriptors passed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Dial(store, Hello{Op: opServe, Fds: true, Args: []string{"-store=" + store}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Conn.Close()
			var fds []int
			for _, f := range tc.files {
				fds = append(fds, int(f.Fd()))
			}
			if _, _, err := s.Conn.(*net.UnixConn).WriteMsgUnix(make([]byte, 8), unix.UnixRights(fds...), nil); err != nil {
				t.Fatal(err)
			}
			s.Conn.SetReadDeadline(time.Now().Add(time.Minute)) // only to catch a hang
			if _, err := io.ReadAll(s.Reader); err != nil {
				t.Fatalf("the daemon did not end the connection: %v", err)
			}
			if log := logged(); !strings.Contains(log, tc.want) {
				t.Errorf("the log does not say %q:\n%s", tc.want, log)
			}
		})
	}
}
