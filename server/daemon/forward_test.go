package daemon

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// writes records each Write.
type writes []string

func (w *writes) Write(p []byte) (int, error) { *w = append(*w, string(p)); return len(p), nil }

// The frames the daemon wrote together reach the editor in one write, and a
// frame that came alone goes on at once, before the next is read; the end
// frame's code is returned, and a daemon gone mid-stream is an error.
func TestCopyFrames(t *testing.T) {
	frame := func(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }
	pr, pw := io.Pipe()
	var got writes
	type result struct {
		code int
		err  error
	}
	done := make(chan result)
	go func() {
		code, err := copyFrames(&got, bufio.NewReader(pr))
		done <- result{code, err}
	}()
	// One write of three frames, then one alone; a pipe hands each write
	// to one read, so copyFrames sees the burst buffered.
	pw.Write([]byte(frame(`{"a":1}`) + frame(`{"b":2}`) + frame(`{"c":3}`)))
	pw.Write([]byte(frame(`{"d":4}`)))
	pw.Write(endFrame(3))
	r := <-done
	if r.err != nil || r.code != 3 {
		t.Fatalf("copyFrames = %d, %v; want the end frame's 3", r.code, r.err)
	}
	want := writes{frame(`{"a":1}`) + frame(`{"b":2}`) + frame(`{"c":3}`), frame(`{"d":4}`)}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the editor got %q, want %q", got, want)
	}

	got = nil
	code, err := copyFrames(&got, bufio.NewReader(strings.NewReader(frame(`{"e":5}`)+"Content-Length: 9\r\n\r\n{")))
	if err == nil || code != 0 {
		t.Fatalf("a cut stream: %d, %v", code, err)
	}
	if len(got) != 1 || got[0] != frame(`{"e":5}`) {
		t.Errorf("before the cut the editor got %q", got)
	}
	if errors.Is(err, errEditorGone) {
		t.Errorf("the daemon's end was taken for the editor's: %v", err)
	}
}
