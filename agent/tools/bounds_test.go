//go:build unix

package tools

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agent-lsp/agent-lsp/agent/message"
)

func TestCommandTimeoutClamped(t *testing.T) {
	for _, tt := range []struct {
		requested int
		def, want time.Duration
	}{
		{0, 0, 2 * time.Minute},
		{0, 30 * time.Second, 30 * time.Second},
		{5, time.Minute, 5 * time.Second},
		{1 << 40, time.Minute, 10 * time.Minute},
		{-3, time.Minute, time.Minute},
		{0, time.Millisecond, time.Second},
	} {
		if got := commandTimeout(tt.requested, tt.def); got != tt.want {
			t.Errorf("commandTimeout(%d, %s) = %s, want %s", tt.requested, tt.def, got, tt.want)
		}
	}
}

func TestCutAnySize(t *testing.T) {
	s := strings.Repeat("é", 5000)
	for _, limit := range []int{-100, 0, 1, 300, 9999, 20000} {
		got := Cut(s, limit)
		if len(got) > max(limit, minCut)+80 || !strings.HasPrefix(got, "é") {
			t.Errorf("Cut(_, %d): %d bytes", limit, len(got))
		}
	}
}

func TestBoundedOutput(t *testing.T) {
	for _, keep := range []int{0, 1000, 16 << 10, 64 << 10} {
		b := newOutput(keep)
		chunk := []byte(strings.Repeat("x", 4096))
		for i := 0; i < 100_000; i++ { // 400 MB through a writer that keeps a few KiB
			if n, err := b.Write(chunk); n != len(chunk) || err != nil {
				t.Fatalf("write: %d %v", n, err)
			}
		}
		b.Write([]byte("THE END"))
		out := b.String()
		if len(out) > max(keep, minCut)+100 || !strings.HasSuffix(out, "THE END") || !strings.Contains(out, "of 409600007 bytes of output dropped") {
			t.Fatalf("keep %d: %d bytes: ...%s", keep, len(out), out[max(0, len(out)-100):])
		}
		if cap(b.tail) > 4*max(keep, minCut) {
			t.Fatalf("keep %d: the tail grew to %d bytes", keep, cap(b.tail))
		}
	}
}

// Output cut in the middle of multi-byte characters stays valid UTF-8, and
// output within the limit comes back whole.
func TestBoundedOutputKeepsCharactersWhole(t *testing.T) {
	for n := 0; n < 8; n++ {
		b := newOutput(300)
		b.Write([]byte(strings.Repeat("x", n)))
		b.Write([]byte(strings.Repeat("é€😀", 200)))
		if out := b.String(); !utf8.ValidString(out) || !strings.Contains(out, "bytes of output dropped") {
			t.Fatalf("offset %d: %q", n, out)
		}
	}
	b := newOutput(300)
	b.Write([]byte("short\n"))
	if out := b.String(); out != "short\n" {
		t.Fatalf("%q", out)
	}
}

// A command that leaves a child running in the background ends when the
// command does; the child is killed and the output kept.
func TestBackgroundChildrenDoNotOutliveTheCommand(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	out, _, code, err := execute(context.Background(), dir, []string{"sh", "-c", "sleep 300 & echo $! > child.pid; echo started"}, time.Minute, os.Environ(), 4096, nil, nil)
	if err != nil || code != 0 || !strings.Contains(out, "started") {
		t.Fatalf("%q %d %v", out, code, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the command waited %s for its background child", d)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "child.pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the background child %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestCutArgs(t *testing.T) {
	small := `{"path":"a"}`
	if CutArgs(small) != small {
		t.Fatal("small arguments changed")
	}
	big := `{"path":"a","content":"` + strings.Repeat("x", MaxArgs) + `"}`
	cut := CutArgs(big)
	if len(cut) > 200 || !strings.Contains(cut, "over the 262144-byte limit") {
		t.Fatalf("cut: %s", cut)
	}
	res := All().Call(context.Background(), &Env{}, callOf("create_file", cut))
	if !res.IsError || !strings.Contains(res.Content, "were cut and not run") {
		t.Fatalf("a call with cut arguments: %+v", res)
	}
}

func callOf(name, args string) message.ToolCall {
	return message.ToolCall{ID: "c1", Name: name, Args: args}
}
