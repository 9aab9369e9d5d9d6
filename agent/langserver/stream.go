package langserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"go.lsp.dev/jsonrpc2"
)

// Bounds of what a language server may send or hold up.
const (
	// MaxFrame bounds one message from a server: a longer one ends the
	// connection (and the server) before its body is read.
	MaxFrame = 16 << 20
	// maxHeader bounds one header line.
	maxHeader = 4 << 10
	// maxBadFrames is how many undecodable messages a server may send
	// before its connection is dropped.
	maxBadFrames = 100
	// writeTimeout bounds one write to a server that stopped reading.
	writeTimeout = 10 * time.Second
)

// stream frames LSP messages to and from a language server's stdio. It reads
// frames itself, so that a frame over MaxFrame is refused before its body is
// read and a body that does not decode is skipped (go.lsp.dev/jsonrpc2 v1
// would end the connection on it, or read a gigabyte); it writes through
// jsonrpc2's header stream, each write bounded by writeTimeout.
type stream struct {
	in    *bufio.Reader // read only by Read, on the connection's read loop
	inner jsonrpc2.Stream
	bad   int // undecodable frames so far; read loop only
	close func() error
}

func newStream(r io.Reader, w *os.File, closeAll func() error) *stream {
	out := deadlineWriter{w}
	return &stream{in: bufio.NewReaderSize(r, 64<<10), close: closeAll,
		inner: jsonrpc2.NewHeaderStream(struct {
			io.Reader
			io.Writer
			io.Closer
		}{r, out, w})}
}

// deadlineWriter writes to a pipe with a deadline per write: a server that
// stops reading its input fails the write instead of blocking the caller.
type deadlineWriter struct{ f *os.File }

func (d deadlineWriter) Write(p []byte) (int, error) {
	d.f.SetWriteDeadline(time.Now().Add(writeTimeout))
	return d.f.Write(p)
}

func (s *stream) Read(ctx context.Context) (jsonrpc2.Message, int64, error) {
	for {
		n, err := s.header()
		if err != nil {
			return nil, 0, err
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(s.in, body); err != nil {
			return nil, 0, err
		}
		msg, err := jsonrpc2.DecodeMessage(body)
		if err == nil {
			return msg, int64(n), nil
		}
		if s.bad++; s.bad > maxBadFrames {
			return nil, 0, fmt.Errorf("more than %d messages that are not JSON-RPC: %w", maxBadFrames, err)
		}
	}
}

// header reads one header block and returns its Content-Length.
func (s *stream) header() (int, error) {
	length := -1
	for lines := 0; ; lines++ {
		if lines > 32 {
			return 0, errors.New("a header of more than 32 lines")
		}
		line, err := s.in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxHeader {
			return 0, errors.New("a header line too long")
		}
		if err != nil {
			return 0, err
		}
		text := strings.TrimRight(string(line), "\r\n")
		if text == "" {
			if length < 0 {
				return 0, errors.New("a message without Content-Length")
			}
			return length, nil
		}
		name, value, ok := strings.Cut(text, ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil || n < 0 {
			return 0, fmt.Errorf("a bad Content-Length %q", value)
		}
		if n > MaxFrame {
			return 0, fmt.Errorf("a message of %d bytes, over the %d-byte limit", n, MaxFrame)
		}
		length = n
	}
}

func (s *stream) Write(ctx context.Context, msg jsonrpc2.Message) (int64, error) {
	return s.inner.Write(ctx, msg)
}

func (s *stream) Close() error { return s.close() }
