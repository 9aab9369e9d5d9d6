package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/store/postgres"
)

// Forwarder is the agent-lsp an editor starts: it reads the editor's
// initialize request, finds (or starts) the daemon of the store the server
// would use, and forwards the connection to it unchanged.
type Forwarder struct {
	Flags   *config.Flags // the command line's settings
	Environ []string      // the editor's environment, sent to the daemon for this connection only
	Starter Starter
	Stderr  io.Writer
	// Serve serves the connection in this process, for a store that needs
	// no daemon (a PostgreSQL database, which processes share by
	// themselves), or when no daemon can be started (a *StartError), with
	// the notices the user must see; it returns the exit code.
	Serve func(ctx context.Context, in io.Reader, out io.Writer, notices []string) int
}

// Forward forwards in and out through the daemon until the server ends or
// the daemon goes away. It returns the process's exit code: the server's
// when it ended (after the editor's exit, or the editor closing the
// connection); 1 with a clear message when the daemon ended the connection
// (the editor restarts the server, which starts a fresh daemon).
func (f Forwarder) Forward(ctx context.Context, in io.Reader, out io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(f.Stderr, "agent-lsp: "+format+"\n", args...)
		return 1
	}
	br := bufio.NewReaderSize(in, 64<<10)
	// A bad or oversized frame: the server answers it (what was not read of
	// it follows unparsed); the store is then the default one.
	first, body, err := readFrame(br, maxFirstFrame)
	if errors.Is(err, io.EOF) && len(first) == 0 {
		return 0 // the editor closed at once
	}
	storePath, err := f.storePath(body)
	if err != nil {
		return fail("%v", err)
	}
	if postgres.IsURL(storePath) && f.Serve != nil {
		return f.Serve(ctx, io.MultiReader(bytes.NewReader(first), br), out, nil)
	}
	dir, _ := os.Getwd()
	args := append(f.Flags.Args(), "-store="+storePath)
	// The editor's bytes go on unparsed (the server answers bad frames).
	s, restore, err := f.connect(ctx, storePath, Hello{Op: opServe, Env: f.Environ, Dir: dir, Args: args}, in, out, first, br)
	if code, ok := f.fallback(ctx, err, io.MultiReader(bytes.NewReader(first), br), out); ok {
		return code
	}
	if err != nil {
		return fail("%v", err)
	}
	defer s.Conn.Close()
	defer restore()
	code, err := copyFrames(out, s.Reader)
	switch {
	case ctx.Err() != nil || errors.Is(err, errEditorGone):
		return 0
	case err != nil:
		return fail("the agent-lsp daemon for %s ended the connection (%v); restart the language server: a new daemon starts and interrupted sessions resume (daemon log: %s)",
			storePath, err, LogPath(storePath))
	}
	return code
}

// connect says hello to the daemon of storePath, offering to pass the
// client's in and out when they are pipes or sockets, and starts the
// client's bytes on their way: first (a message read of in already), then
// what br, in's reader, holds and reads. Passed over, the daemon serves the
// streams itself from those bytes on, and the connection carries only the
// end; restore, once the end is read, gives them back the modes they had
// (the daemon does, unless it dies). Else the bytes are copied until the
// client's end, which the daemon is told of (it then cancels the
// connection's runs). The connection closes when ctx ends (SIGTERM): the
// daemon then cancels its runs.
func (f Forwarder) connect(ctx context.Context, storePath string, hello Hello, in io.Reader, out io.Writer, first []byte, br *bufio.Reader) (s *Session, restore func(), err error) {
	stdin, stdout, canPass := handoffReady(in, out)
	hello.Fds = canPass
	starter := f.Starter
	if starter.Logf == nil {
		starter.Logf = func(format string, args ...any) { fmt.Fprintf(f.Stderr, "agent-lsp: "+format+"\n", args...) }
	}
	s, err = starter.Connect(ctx, storePath, hello)
	if err != nil {
		return nil, nil, err
	}
	go func() {
		<-ctx.Done()
		s.Conn.Close()
	}()
	if canPass && s.Welcome.Fds {
		restore = keepModes(stdin, stdout)
		if err := sendStdio(s.Conn, stdin, stdout, append(first, peekAll(br)...)); err != nil {
			restore()
			s.Conn.Close()
			return nil, nil, err
		}
		return s, restore, nil
	}
	go func() {
		io.Copy(s.Conn, io.MultiReader(bytes.NewReader(first), br))
		if uc, ok := s.Conn.(*net.UnixConn); ok {
			uc.CloseWrite()
		}
	}()
	return s, func() {}, nil
}

// fallback serves the client in this process when err is a *StartError (no
// daemon could be started or reached), as AGENT_LSP_DAEMON=off would: the
// server opens the store itself, or keeps the window's sessions in memory,
// and the user is told. ok is false for any other err.
func (f Forwarder) fallback(ctx context.Context, err error, in io.Reader, out io.Writer) (code int, ok bool) {
	var se *StartError
	if !errors.As(err, &se) || f.Serve == nil {
		return 0, false
	}
	fmt.Fprintf(f.Stderr, "agent-lsp: %v; serving this window in-process\n", err)
	notice := fmt.Sprintf("%v. This window serves itself, as with AGENT_LSP_DAEMON=off: its sessions are not shared with other windows (daemon log: %s)", err, LogPath(se.Store))
	return f.Serve(ctx, in, out, []string{notice}), true
}

// peekAll returns what br holds already, without reading more.
func peekAll(br *bufio.Reader) []byte {
	b, _ := br.Peek(br.Buffered())
	return b
}

// errEditorGone is copyFrames's failure to write to the editor.
var errEditorGone = errors.New("the editor is gone")

// copyFrames copies the daemon's frames from r to the editor's w until the
// end frame, whose code it returns. A large frame's body streams through,
// never held whole. Frames that arrived together (a run's events, which the
// daemon writes at once) are written together: w is written when no more
// are buffered.
func copyFrames(w io.Writer, r *bufio.Reader) (int, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	for {
		header, length, err := readHeader(r)
		if err != nil {
			bw.Flush()
			return 0, err
		}
		if code, ok := endCode(header); ok {
			if bw.Flush() != nil {
				return 0, errEditorGone
			}
			return code, nil
		}
		if length <= wholeFrame { // written only once whole: a daemon that dies mid-frame leaves no half frame
			frame := bytes.NewBuffer(header)
			if _, err := io.CopyN(frame, r, int64(length)); err != nil {
				bw.Flush()
				return 0, err
			}
			header, length = frame.Bytes(), 0
		}
		if _, err := bw.Write(header); err != nil {
			return 0, errEditorGone
		}
		if _, err := io.CopyN(editorWriter{bw}, r, int64(length)); err != nil {
			var gone editorError
			if errors.As(err, &gone) {
				return 0, errEditorGone
			}
			bw.Flush()
			return 0, err
		}
		if r.Buffered() == 0 && bw.Flush() != nil {
			return 0, errEditorGone
		}
	}
}

// wholeFrame: frames up to this size are read whole before the editor gets
// them; larger ones stream through.
const wholeFrame = 1 << 20

// editorWriter marks its writer's failures as the editor's (copyFrames
// tells them from the daemon's).
type editorWriter struct{ w io.Writer }

type editorError struct{ error }

func (e editorWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		err = editorError{err}
	}
	return n, err
}

// ForwardACP forwards an ACP client's connection (newline-delimited
// JSON-RPC) through the daemon of the store the settings name, with the
// workspace folders, until the server ends or the daemon goes away. It
// returns the process's exit code, as Forward.
func (f Forwarder) ForwardACP(ctx context.Context, in io.Reader, out io.Writer, folders []string) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(f.Stderr, "agent-lsp acp: "+format+"\n", args...)
		return 1
	}
	storePath, err := f.storePath(nil)
	if err != nil {
		return fail("%v", err)
	}
	if postgres.IsURL(storePath) && f.Serve != nil {
		return f.Serve(ctx, in, out, nil)
	}
	dir, _ := os.Getwd()
	args := append(f.Flags.Args(), "-store="+storePath)
	for _, w := range folders {
		args = append(args, "-workspace="+w)
	}
	br := bufio.NewReader(in)
	s, restore, err := f.connect(ctx, storePath, Hello{Op: opACP, Env: f.Environ, Dir: dir, Args: args}, in, out, nil, br)
	if code, ok := f.fallback(ctx, err, br, out); ok {
		return code
	}
	if err != nil {
		return fail("%v", err)
	}
	defer s.Conn.Close()
	defer restore()
	end := []byte(endHeader + ": ")
	for {
		line, err := s.Reader.ReadBytes('\n')
		if ctx.Err() != nil {
			return 0
		}
		if bytes.HasPrefix(line, end) {
			n, _ := strconv.Atoi(strings.TrimSpace(string(line[len(end):])))
			return n
		}
		if len(line) > 0 {
			if _, werr := out.Write(line); werr != nil {
				return 0 // the client is gone
			}
		}
		if err != nil {
			return fail("the agent-lsp daemon for %s ended the connection (%v); start the agent again: interrupted sessions resume (daemon log: %s)",
				storePath, err, LogPath(storePath))
		}
	}
}

// endHeader marks the daemon's last frame on a connection whose server
// ended (after the editor's exit, or its closing the connection): its value
// is the exit code the server would have had in-process. A connection that
// ends without it ended because the daemon did.
const endHeader = "Agent-Lsp-End"

// endFrame is the frame that ends a connection with code.
func endFrame(code int) []byte {
	return []byte(fmt.Sprintf("Content-Length: 0\r\n%s: %d\r\n\r\n", endHeader, code))
}

// endCode reads an end frame's exit code.
func endCode(frame []byte) (int, bool) {
	i := bytes.Index(frame, []byte(endHeader+": "))
	if i < 0 || !bytes.HasSuffix(frame, []byte("\r\n\r\n")) { // an end frame has no body
		return 0, false
	}
	rest := frame[i+len(endHeader)+2:]
	n, err := strconv.Atoi(string(rest[:bytes.IndexByte(rest, '\r')]))
	return n, err == nil
}

// storePath is the store the server would use for this initialize request:
// flags, then initializationOptions, then the environment (config.Resolve).
func (f Forwarder) storePath(body []byte) (string, error) {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			InitOptions json.RawMessage `json:"initializationOptions"`
		} `json:"params"`
	}
	json.Unmarshal(body, &msg)
	getenv := lookup(f.Environ)
	var opts json.RawMessage
	if msg.Method == "initialize" {
		opts = msg.Params.InitOptions
	}
	st, _, err := config.Resolve(getenv, opts, f.Flags)
	if err != nil { // the daemon's server reports it to the editor; the store is still the one named
		if st, _, err = config.Resolve(getenv, nil, f.Flags); err != nil {
			return "", err
		}
	}
	if postgres.IsURL(st.StorePath) {
		return st.StorePath, nil
	}
	p, err := filepath.Abs(st.StorePath)
	if err != nil {
		return "", fmt.Errorf("store path %q: %w", st.StorePath, err)
	}
	return p, nil
}

// maxFirstFrame bounds the editor's first message, which the forwarder
// reads to find the store: the server's own limit (a larger one is refused
// by the server, by its header).
const maxFirstFrame = server.MaxMessageSize

// maxHeader bounds a frame's header block.
const maxHeader = 64 << 10

// readHeader reads one LSP header block: its bytes as read and its
// Content-Length. On an error, header holds what was read.
func readHeader(r *bufio.Reader) (header []byte, length int, err error) {
	var buf bytes.Buffer
	length = -1
	for {
		line, err := r.ReadSlice('\n')
		if buf.Len()+len(line) > maxHeader {
			return buf.Bytes(), 0, fmt.Errorf("LSP headers over 64 KiB")
		}
		buf.Write(line)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return buf.Bytes(), 0, err
		}
		h := strings.TrimRight(string(line), "\r\n")
		if h == "" {
			if length < 0 {
				return buf.Bytes(), 0, fmt.Errorf("no Content-Length")
			}
			return buf.Bytes(), length, nil
		}
		name, value, _ := strings.Cut(h, ":")
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || n < 0 {
				return buf.Bytes(), 0, fmt.Errorf("bad Content-Length %q", strings.TrimSpace(value))
			}
			length = n
		}
	}
}

// readFrame reads one LSP message of at most limit bytes: its bytes as
// read (headers and body) and its body. The body is read as it comes, never
// allocated at the length the header claims. On an error, frame holds what
// was read; a body over limit is left unread in r.
func readFrame(r *bufio.Reader, limit int) (frame, body []byte, err error) {
	header, length, err := readHeader(r)
	if err != nil {
		return header, nil, err
	}
	if length > limit {
		return header, nil, fmt.Errorf("a message of %d bytes is over the %d-byte limit", length, limit)
	}
	buf := bytes.NewBuffer(header)
	start := buf.Len()
	if _, err := io.CopyN(buf, r, int64(length)); err != nil {
		return buf.Bytes(), nil, err
	}
	b := buf.Bytes()
	return b, b[start:], nil
}
