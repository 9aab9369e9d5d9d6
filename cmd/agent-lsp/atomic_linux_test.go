package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"go.lsp.dev/uri"
	"golang.org/x/sys/unix"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// firstWrite waits until a file in dir is created or written (inotify),
// or the deadline passes, and reports whether one was.
func firstWrite(t *testing.T, fd int, deadline time.Time, exited <-chan struct{}) bool {
	t.Helper()
	buf := make([]byte, 64<<10)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 20)
		if err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		if n == 0 {
			continue
		}
		m, err := unix.Read(fd, buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= m; {
			ev := (*unix.InotifyEvent)(unsafePointer(buf[off:]))
			if ev.Mask&(unix.IN_CREATE|unix.IN_MODIFY) != 0 {
				return true
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
	return false
}

// TestKillDuringWrite kills `agent-lsp run` (SIGKILL) the moment it begins
// to write a file, at seeded delays after the first write to the folder
// (inotify), while it edits a 1 MB file or creates a 100 KB one: the
// edited file is always its old text or its new one, and the created file
// is absent or whole, never shorter.
func TestKillDuringWrite(t *testing.T) {
	points := 24
	if testing.Short() {
		points = 8
	}
	line := strings.Repeat("x", 79) + "\n"
	old := "the first line\n" + strings.Repeat(line, (1<<20)/len(line))
	edited := strings.Replace(old, "the first line\n", "the first line, edited\n", 1)
	created := strings.Repeat("c", 100<<10)
	rng := rand.New(rand.NewPCG(43, 44))
	torn := 0
	for i := range points {
		create := i%2 == 1
		delay := time.Duration(rng.IntN(1500)) * time.Microsecond
		var tc scripted.ToolCall
		if create {
			tc = call("create_file", map[string]any{"path": "new.txt", "content": created})
		} else {
			tc = call("edit_file", map[string]any{"path": "big.txt", "old_text": "the first line\n", "new_text": "the first line, edited\n"})
		}
		c := newCLI(t, scripted.Turn{ToolCalls: []scripted.ToolCall{tc}}, scripted.Turn{Text: "done"})
		big := filepath.Join(c.workspace, "big.txt")
		os.WriteFile(big, []byte(old), 0o644)
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := unix.InotifyAddWatch(fd, c.workspace, unix.IN_CREATE|unix.IN_MODIFY); err != nil {
			t.Fatal(err)
		}
		cmd := c.command("run", "--workspace", c.workspace, "--durability", "sync", "edit")
		var out bytes.Buffer
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		wrote := firstWrite(t, fd, time.Now().Add(time.Minute), exited)
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		unix.Close(fd)
		if !wrote {
			t.Fatalf("point %d: the run ended or a minute passed before it wrote a file: %s", i, out.String())
		}
		got, _ := os.ReadFile(big)
		if s := string(got); s != old && s != edited {
			torn++
			t.Errorf("point %d (edit, killed %v after the first write): big.txt has %d bytes, neither the old %d nor the new %d", i, delay, len(got), len(old), len(edited))
		}
		b, err := os.ReadFile(filepath.Join(c.workspace, "new.txt"))
		if err == nil && !bytes.Equal(b, []byte(created)) {
			torn++
			t.Errorf("point %d (create, killed %v after the first write): new.txt has %d bytes of %d", i, delay, len(b), len(created))
		}
	}
	t.Logf("%d kills, %d files torn", points, torn)
	if torn > 0 {
		t.Fatalf("%d of %d kills left a torn file", torn, points)
	}
}

func unsafePointer(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

// applyChildEnv, set in a child of the test binary, makes it read the
// params of a workspace/applyEdit on stdin and apply them as the headless
// client does, under an RLIMIT_FSIZE of 64 KiB, printing the answer.
const applyChildEnv = "AGENT_LSP_TEST_APPLY_EDIT"

func applyChild(string) int {
	params, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Println(err)
		return 3
	}
	lim := syscall.Rlimit{Cur: 64 << 10, Max: 64 << 10}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println(err)
		return 3
	}
	res := (&client{errw: os.Stderr, enc: workspace.UTF8}).applyEdit(json.RawMessage(params))
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
	return 0
}

// Under RLIMIT_FSIZE, an edit that makes a file too big and a create of a
// file too big are answered applied: false, and leave the edited file
// untouched and no created file (in a child process, where the limit is).
func TestHeadlessEditFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	old := strings.Repeat("old line\n", 1000)
	os.WriteFile(big, []byte(old), 0o644)
	huge := strings.Repeat("x", 200<<10)
	for name, edit := range map[string]any{
		"edit": map[string]any{"documentChanges": []any{map[string]any{
			"textDocument": map[string]any{"uri": string(uri.File(big)), "version": nil},
			"edits":        []any{map[string]any{"range": map[string]any{"start": map[string]int{"line": 0, "character": 0}, "end": map[string]int{"line": 1, "character": 0}}, "newText": huge}},
		}}},
		"create": map[string]any{"documentChanges": []any{
			map[string]any{"kind": "create", "uri": string(uri.File(filepath.Join(dir, "new.txt")))},
			map[string]any{"textDocument": map[string]any{"uri": string(uri.File(filepath.Join(dir, "new.txt"))), "version": nil},
				"edits": []any{map[string]any{"range": map[string]any{"start": map[string]int{"line": 0, "character": 0}, "end": map[string]int{"line": 0, "character": 0}}, "newText": huge}}},
		}},
	} {
		t.Run(name, func(t *testing.T) {
			params, _ := json.Marshal(map[string]any{"label": "agent: " + name, "edit": edit})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), applyChildEnv+"=1")
			cmd.Stdin = bytes.NewReader(params)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v: %s", err, out)
			}
			var res struct {
				Applied       bool   `json:"applied"`
				FailureReason string `json:"failureReason"`
			}
			if err := json.Unmarshal(out, &res); err != nil || res.Applied || !strings.Contains(res.FailureReason, "file too large") {
				t.Fatalf("the answer: %s (%v)", out, err)
			}
			if b, _ := os.ReadFile(big); string(b) != old {
				t.Fatalf("big.txt has %d bytes after a refused edit, want its old %d", len(b), len(old))
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Fatalf("files left beside it: %v", ents)
			}
		})
	}
}
