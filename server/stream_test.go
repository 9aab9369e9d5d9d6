package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"go.lsp.dev/jsonrpc2"
)

type fuzzRWC struct {
	io.Reader
	out bytes.Buffer
}

func (f *fuzzRWC) Write(p []byte) (int, error) { return f.out.Write(p) }
func (f *fuzzRWC) Close() error                { return nil }

// FuzzStream feeds arbitrary bytes, then a valid frame, to the guarded
// stream's header reader and decoder: it must never panic, never fail with
// anything but the end of the input, and the valid frame behind the garbage
// must be read (a bad header resynchronizes at the next Content-Length).
func FuzzStream(f *testing.F) {
	for _, s := range []string{
		"Content-Length: abc\r\n\r\n{}",
		"Content-Length: -5\r\n\r\n",
		"X: y\r\n\r\ncontent-length: 2\r\n\r\n{}",
		"Content-Length: 5\r\n\r\n{bad}",
		"Content-Length: 2\r\n\r\n42",
		"Content-Length: 38\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}",
		"Content-Length: 3\r\n\r\n[1]",
		"Content-Length: 9999999999\r\n\r\n",
		"garbage\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	valid := `{"jsonrpc":"2.0","id":7,"method":"ok"}`
	f.Fuzz(func(t *testing.T, data []byte) {
		in := io.MultiReader(bytes.NewReader(data), bytes.NewReader([]byte(fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(valid), valid))))
		rwc := &fuzzRWC{Reader: in}
		s := newGuardedStream(rwc, func(string, ...any) {})
		s.limit = 1 << 10
		sawValid := false
		for i := 0; i < 10000; i++ {
			msg, _, err := s.Read(context.Background())
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("read: %v", err)
				}
				break
			}
			if c, ok := msg.(*jsonrpc2.Call); ok && c.Method() == "ok" {
				sawValid = true
			}
		}
		// Garbage may swallow the valid frame only when it ends inside a
		// header block or a body of a declared length that covers it.
		if !sawValid && !strings.Contains(string(data), "Content-Length") && !strings.Contains(strings.ToLower(string(data)), "content-length") && !bytes.ContainsAny(data, "\n") {
			t.Fatalf("the valid frame after %q was lost", data)
		}
	})
}
