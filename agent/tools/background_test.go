//go:build linux

package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
)

// withMarker gives env's commands a variable no other process has, and
// returns a func listing the processes that have it (read in /proc).
func withMarker(t *testing.T, env *Env) func() []string {
	mark := fmt.Sprintf("AGENT_LSP_BG_TEST=%d-%s-%d", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
	env.CommandEnv = append(env.CommandEnv, mark)
	return func() []string { return procsWith(mark) }
}

// procsWith lists the processes whose environment holds kv.
func procsWith(kv string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(b, []byte{0}) {
			if string(v) == kv {
				cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
			}
		}
	}
	return out
}

func call(t *testing.T, env *Env, tool string, args map[string]any) Result {
	t.Helper()
	b, _ := json.Marshal(args)
	return All().Call(context.Background(), env, callOf(tool, string(b)))
}

// freePort returns a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A web server started in the background serves a later command of the
// project (whose network is allowed); its log is in process_output; after
// process_stop nothing of it is left.
func TestBackgroundServer(t *testing.T) {
	env, root, perms := sandboxed(t, sandbox.Namespaces)
	env.SandboxSettings.Network = []string{"p"}
	env.Background = NewBackground(4, nil)
	defer env.Background.Close()
	left := withMarker(t, env)
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the project\n"), 0o644)
	port := freePort(t)
	res := call(t, env, "run_command", map[string]any{"command": fmt.Sprintf("exec python3 -u -m http.server %d --bind 127.0.0.1", port), "background": true})
	if res.IsError || !strings.Contains(res.Content, "started p1 in the background") {
		t.Fatalf("start: %s", res.Content)
	}
	if len(perms.reqs) != 1 || !perms.reqs[0].Background || perms.reqs[0].AlwaysAsk {
		t.Fatalf("the permission request: %+v", perms.reqs)
	}
	fetch := fmt.Sprintf("for i in $(seq 100); do curl -sf http://127.0.0.1:%d/hello.txt && exit 0; sleep 0.1; done; exit 1", port)
	if res := runLine(t, env, fetch); res.IsError || !strings.Contains(res.Content, "hello from the project") {
		t.Fatalf("fetch: %s", res.Content)
	}
	out := call(t, env, "process_output", map[string]any{"id": "p1"})
	if out.IsError || !strings.Contains(out.Content, "p1: running") || !strings.Contains(out.Content, "GET /hello.txt") {
		t.Fatalf("output: %s", out.Content)
	}
	// Nothing new since: the next look says so.
	if again := call(t, env, "process_output", map[string]any{"id": "p1"}); !strings.Contains(again.Content, "no new output") {
		t.Fatalf("output again: %s", again.Content)
	}
	// From the start, explicitly.
	if first := call(t, env, "process_output", map[string]any{"id": "p1", "since_byte": 0}); !strings.Contains(first.Content, "GET /hello.txt") {
		t.Fatalf("output from 0: %s", first.Content)
	}
	if len(left()) == 0 {
		t.Fatal("no process carries the marker while the server runs: the check below proves nothing")
	}
	stop := call(t, env, "process_stop", map[string]any{"id": "p1"})
	if stop.IsError || !strings.Contains(stop.Content, "p1: stopped") {
		t.Fatalf("stop: %s", stop.Content)
	}
	if ps := left(); len(ps) > 0 {
		t.Fatalf("left running after process_stop: %v", ps)
	}
}

// At most max run at once: the next is refused, naming the running ones,
// until one ends; Close ends every one, however it tried to get away
// (setsid, nohup, a double fork), and deletes their output.
func TestBackgroundLimitAndClose(t *testing.T) {
	for _, iso := range []sandbox.Isolation{sandbox.Namespaces, sandbox.Snapshot} {
		t.Run(string(iso), func(t *testing.T) {
			env, _, perms := sandboxed(t, iso)
			dir := t.TempDir()
			env.Background = NewBackground(4, func() string { return dir })
			t.Cleanup(env.Background.Close)
			left := withMarker(t, env)
			lines := []string{"sleep 600", "setsid sh -c 'sleep 600' & sleep 600", "nohup sleep 600 >/dev/null 2>&1 & echo detached; wait",
				"(sh -c 'sleep 600 &' &); echo forked; sleep 600"}
			for i, line := range lines {
				res := call(t, env, "run_command", map[string]any{"command": line, "background": true})
				if res.IsError || !strings.Contains(res.Content, fmt.Sprintf("started p%d", i+1)) {
					t.Fatalf("start %d: %s", i+1, res.Content)
				}
			}
			res := call(t, env, "run_command", map[string]any{"command": "sleep 1", "background": true})
			if !res.IsError || !strings.Contains(res.Content, "at most 4") || !strings.Contains(res.Content, "p1, p2, p3, p4") {
				t.Fatalf("the fifth: %s", res.Content)
			}
			if iso == sandbox.Snapshot && !perms.reqs[0].AlwaysAsk {
				t.Fatalf("a background process without namespaces did not always ask: %+v", perms.reqs[0])
			}
			if stop := call(t, env, "process_stop", map[string]any{"id": "p1"}); !strings.Contains(stop.Content, "stopped") {
				t.Fatal(stop.Content)
			}
			if res := call(t, env, "run_command", map[string]any{"command": "echo five; sleep 600", "background": true}); res.IsError {
				t.Fatalf("after a stop: %s", res.Content)
			}
			wait := call(t, env, "process_wait", map[string]any{"id": "p3", "timeout_seconds": 1})
			if !strings.Contains(wait.Content, "p3: running") || !strings.Contains(wait.Content, "detached") {
				t.Fatalf("wait: %s", wait.Content)
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(left()) < 8 && time.Now().Before(deadline) { // every sleep and shell has started
				time.Sleep(50 * time.Millisecond)
			}
			if len(left()) == 0 {
				t.Fatal("no process carries the marker: the check below proves nothing")
			}
			env.Background.Close()
			if ps := left(); len(ps) > 0 {
				t.Fatalf("left running after the run's end: %v", ps)
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Fatalf("output files left: %v", ents)
			}
			if res := call(t, env, "process_output", map[string]any{"id": "p2"}); !res.IsError || !strings.Contains(res.Content, "no background process") {
				t.Fatalf("after the end: %s", res.Content)
			}
			if res := call(t, env, "run_command", map[string]any{"command": "sleep 1", "background": true}); !res.IsError {
				t.Fatalf("started after the end: %s", res.Content)
			}
		})
	}
}

// A process that ends on its own reports its status and all its output;
// one that cannot be found says so.
func TestBackgroundExit(t *testing.T) {
	env, _, _ := sandboxed(t, sandbox.Namespaces)
	env.Background = NewBackground(4, nil)
	defer env.Background.Close()
	call(t, env, "run_command", map[string]any{"command": "echo out; echo err >&2; exit 3", "background": true})
	wait := call(t, env, "process_wait", map[string]any{"id": "p1", "timeout_seconds": 60})
	if !strings.Contains(wait.Content, "exited with status 3") || !strings.Contains(wait.Content, "out\n") || !strings.Contains(wait.Content, "err\n") {
		t.Fatalf("wait: %s", wait.Content)
	}
	if res := call(t, env, "process_output", map[string]any{"id": "p9"}); !res.IsError || !strings.Contains(res.Content, "this run's: p1") {
		t.Fatalf("unknown ID: %s", res.Content)
	}
	off := *env
	off.Background = NewBackground(0, nil)
	if res := call(t, &off, "run_command", map[string]any{"command": "true", "background": true}); !res.IsError || !strings.Contains(res.Content, "off") {
		t.Fatalf("with the setting 0: %s", res.Content)
	}
}

// The output file keeps the newest bytes within its bound; offsets count
// everything written, and what was dropped is said.
func TestBackgroundOutputBounded(t *testing.T) {
	o := newOutFile(filepath.Join(t.TempDir(), "out"), 100)
	defer o.remove()
	for i := range 30 {
		fmt.Fprintf(o, "line %02d\n", i) // 8 bytes each: 240 in all
	}
	if o.Total() != 240 {
		t.Fatalf("total %d", o.Total())
	}
	b, from, total := o.read(0, 1000)
	if total != 240 || from < 140 || int64(len(b)) != total-from || !strings.HasSuffix(string(b), "line 29\n") {
		t.Fatalf("from %d, total %d: %q", from, total, b)
	}
	var size int64
	for _, f := range []string{"out", "out.1"} {
		if fi, err := os.Stat(filepath.Join(filepath.Dir(o.path), f)); err == nil {
			size += fi.Size()
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v", f, fi.Mode())
			}
		}
	}
	if size > 100 {
		t.Fatalf("%d bytes on disk, over the bound", size)
	}
	b, from, _ = o.read(232, 4)
	if from != 232 || string(b) != "line" {
		t.Fatalf("from %d: %q", from, b)
	}
}

// A background start a crash interrupted is never started again: the
// model is told its processes ended with the crashed run.
func TestSettleBackgroundStart(t *testing.T) {
	in := Intent{Tool: "run_command", Command: "npm run dev", Background: true, Started: time.Now()}
	res, rerun := All().Settle(context.Background(), &Env{}, callOf("run_command", `{"command":"npm run dev","background":true}`), in, nil)
	if rerun || !res.IsError || !strings.Contains(res.Content, "not running now") || !strings.Contains(res.Content, "not started again") {
		t.Fatalf("rerun %v: %s", rerun, res.Content)
	}
}
