//go:build unix

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// writeLog records each Write its stream makes.
type writeLog struct {
	io.Reader
	writes []string
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}
func (w *writeLog) Close() error { return nil }

// Frames written while the stream is corked reach the connection in one
// write when a cork ends, in the order they were written, even while
// another cork lasts (two runs' reporters on one connection); a frame
// written while uncorked goes out at once, what is held never grows past
// maxHeld, and an uncork without a cork is a bug that panics.
func TestCork(t *testing.T) {
	ctx := context.Background()
	note := func(s *guardedStream, method string, size int) {
		msg := jsonrpc2.NewNotification(method, jsonrpc2.RawMessage(`{"pad":"`+strings.Repeat("x", size)+`"}`))
		if _, err := s.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	methods := func(w string) []string {
		var out []string
		for _, part := range strings.Split(w, "Content-Length: ")[1:] {
			_, body, _ := strings.Cut(part, "\r\n\r\n")
			var m struct{ Method string }
			json.Unmarshal([]byte(body), &m)
			out = append(out, m.Method)
		}
		return out
	}

	w := &writeLog{Reader: strings.NewReader("")}
	s := newGuardedStream(w, func(string, ...any) {})
	note(s, "a", 1)
	s.cork()
	note(s, "b", 1)
	s.cork() // another burst, overlapping
	note(s, "c", 1)
	if len(w.writes) != 1 {
		t.Fatalf("corked frames were written before an uncork: %d writes", len(w.writes))
	}
	s.uncork()
	note(s, "d", 1)
	s.uncork()
	var got []string
	for _, wr := range w.writes {
		got = append(got, fmt.Sprint(methods(wr)))
	}
	if fmt.Sprint(got) != "[[a] [b c] [d]]" {
		t.Errorf("writes = %v, want [[a] [b c] [d]]: each uncork writes what was held", got)
	}
	note(s, "e", 1)
	if len(w.writes) != 4 {
		t.Errorf("a frame written uncorked was held: %d writes", len(w.writes))
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("an uncork without a cork did not panic")
			}
		}()
		s.uncork()
	}()

	w = &writeLog{Reader: strings.NewReader("")}
	s = newGuardedStream(w, func(string, ...any) {})
	s.cork()
	for range 3 {
		note(s, "big", maxHeld/2)
	}
	if len(w.writes) == 0 {
		t.Fatalf("%d bytes held while corked, over the %d bound", s.held.Len(), maxHeld)
	}
	s.uncork()
	var all []string
	for _, wr := range w.writes {
		all = append(all, methods(wr)...)
	}
	if fmt.Sprint(all) != "[big big big]" {
		t.Errorf("frames written: %v", all)
	}
}

// failingWriter fails its first write only, as a pipe might under a
// momentary fault: a writer that failed once must not be trusted again.
type failingWriter struct {
	io.Reader
	failed bool
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if !w.failed {
		w.failed = true
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}
func (w *failingWriter) Close() error { return nil }

// A failed write of held frames is not lost with the uncork that made it:
// every later write returns it, so jsonrpc2 learns the writer is broken.
func TestCorkedWriteFailure(t *testing.T) {
	s := newGuardedStream(&failingWriter{Reader: strings.NewReader("")}, func(string, ...any) {})
	msg := jsonrpc2.NewNotification("x", jsonrpc2.RawMessage(`{}`))
	s.cork()
	if _, err := s.Write(context.Background(), msg); err != nil {
		t.Fatalf("a held write failed: %v", err)
	}
	if err := s.uncork(); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("uncork = %v, want the write's failure", err)
	}
	if _, err := s.Write(context.Background(), msg); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("a write after the failure = %v, want the failure", err)
	}
}

// After junk or a bad header line, a Content-Length line starts a new
// header block: the frame it begins is read (it used to be skipped with
// the bad block, its request never answered), and the bad block is still
// answered with a ParseError.
func TestContentLengthAfterJunkStartsAFrame(t *testing.T) {
	valid := `{"jsonrpc":"2.0","id":7,"method":"ok"}`
	frame := fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(valid), valid)
	junk, err := os.ReadFile(filepath.Join("..", "testdata", "hostile", "junk-2k.bin")) // binary, newlines included, no header name
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, before string
		parseError   bool // the bad block before the frame is answered
	}{
		{"binary junk", string(junk), true},
		{"a bad header line", "X-Bad header line\r\n", true},
		{"a bad Content-Length", "Content-Length: abc\r\n", true},
		{"junk on the header's own line", "\x00\x01\x02garbage", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rwc := &fuzzRWC{Reader: strings.NewReader(c.before + frame)}
			s := newGuardedStream(rwc, func(string, ...any) {})
			msg, _, err := s.Read(context.Background())
			if err != nil {
				t.Fatalf("the frame after the junk was not read: %v (answered: %q)", err, rwc.out.String())
			}
			if call, ok := msg.(*jsonrpc2.Call); !ok || call.Method() != "ok" {
				t.Fatalf("read %v", msg)
			}
			if got := strings.Contains(rwc.out.String(), `"code":-32700`); got != c.parseError {
				t.Fatalf("ParseError answered: %v, want %v: %q", got, c.parseError, rwc.out.String())
			}
		})
	}
}
