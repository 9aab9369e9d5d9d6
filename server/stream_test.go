package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
)

type fuzzRWC struct {
	io.Reader
	out bytes.Buffer
}

func (f *fuzzRWC) Write(p []byte) (int, error) { return f.out.Write(p) }
func (f *fuzzRWC) Close() error                { return nil }

// FuzzStream feeds arbitrary bytes, then a valid frame, to the guarded stream:
// it must never panic, and bad frames must not stop the valid one behind them
// when the garbage itself is well framed.
func FuzzStream(f *testing.F) {
	for _, s := range []string{
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
		for i := 0; i < 100; i++ {
			if _, _, err := s.Read(context.Background()); err != nil {
				return
			}
		}
	})
}
