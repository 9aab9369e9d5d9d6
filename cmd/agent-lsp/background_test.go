//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// bgMarker is a variable only the processes of one test's run have.
func bgMarker(t *testing.T) string {
	return fmt.Sprintf("AGENT_LSP_BG_E2E=%d-%d", os.Getpid(), time.Now().UnixNano())
}

// processesWith lists the processes whose environment holds kv (read in
// /proc: background processes run in PID namespaces of their own, which
// this one sees).
func processesWith(kv string) []string {
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
				out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}

// toolMessages are the tool results the model was sent, by call ID.
func toolMessages(srv *scripted.Server) map[string]string {
	out := map[string]string{}
	for _, r := range srv.Requests() {
		for _, m := range r.Messages {
			if m.Role == "tool" {
				out[m.ToolCallID] = m.Content
			}
		}
	}
	return out
}

func turnOf(calls ...scripted.ToolCall) scripted.Turn { return scripted.Turn{ToolCalls: calls} }

func toolCall(id, name string, args map[string]any) scripted.ToolCall {
	b, _ := json.Marshal(args)
	return scripted.ToolCall{ID: id, Name: name, Args: b}
}

// Headless, with the project's network allowed: `python3 -m http.server`
// starts in the background, a command fetches a file of the project from
// it, its log shows the request, process_stop ends it; nothing of it is
// left once the run ends, and its output file is gone.
func TestHeadlessBackgroundServer(t *testing.T) {
	requireNamespaces(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := newCLI(t,
		turnOf(toolCall("call_serve", "run_command", map[string]any{"command": fmt.Sprintf("python3 -u -m http.server %d --bind 127.0.0.1", port), "background": true})),
		turnOf(toolCall("call_fetch", "run_command", map[string]any{"command": fmt.Sprintf("curl -sf --retry 60 --retry-delay 1 --retry-connrefused http://127.0.0.1:%d/hello.txt", port)})),
		turnOf(toolCall("call_log", "process_output", map[string]any{"id": "p1"})),
		turnOf(toolCall("call_stop", "process_stop", map[string]any{"id": "p1"})),
		scripted.Turn{Text: "Served and fetched."})
	os.WriteFile(filepath.Join(c.workspace, "hello.txt"), []byte("hello from the project\n"), 0o644)
	mark := bgMarker(t)
	cmd := c.command("run", "--no-daemon", "--json", "--sandbox-network", "*", "--allow", "python3 *", "--allow", "curl *", "serve and fetch")
	cmd.Env = append(cmd.Env, mark)
	out, code := runCmd(t, cmd)
	if _, res := jsonLines(t, out); code != 0 || res["status"] != "done" {
		t.Fatalf("exit %d: %s", code, out)
	}
	msgs := toolMessages(c.srv)
	if m := msgs["call_serve"]; !strings.Contains(m, "started p1 in the background") {
		t.Fatalf("start: %s", m)
	}
	if m := msgs["call_fetch"]; !strings.Contains(m, "hello from the project") {
		t.Fatalf("fetch: %s", m)
	}
	if m := msgs["call_log"]; !strings.Contains(m, "p1: running") || !strings.Contains(m, "GET /hello.txt") {
		t.Fatalf("its output: %s", m)
	}
	if m := msgs["call_stop"]; !strings.Contains(m, "p1: stopped") {
		t.Fatalf("stop: %s", m)
	}
	if ps := processesWith(mark); len(ps) > 0 {
		t.Fatalf("left running: %v", ps)
	}
	noBackgroundFiles(t, c.store)
}

// testdata/hostile/background-escapes.json: the model starts processes
// that daemonize (setsid), double-fork, ignore SIGTERM, SIGHUP and SIGINT
// under nohup, and flood their output, tries a fifth, and ends the run
// without stopping any. The fifth is refused, the output on disk stays
// within its bound (0600), and when the run ends nothing is left. Without
// namespaces (snapshot) a headless run refuses them all.
func TestHeadlessBackgroundEscapes(t *testing.T) {
	requireNamespaces(t)
	for _, iso := range []sandbox.Isolation{sandbox.Namespaces, sandbox.Snapshot} {
		t.Run(string(iso), func(t *testing.T) {
			if iso == sandbox.Namespaces {
				// This subtest never ran before (the probe skipped it); now that it
				// can, headless denies the fixture's shells and wrappers whatever
				// --allow says (shellrule asks about them; only a user can allow),
				// so the attacks never start. Their containment is shown with
				// allowed permissions by TestBackgroundProcessesEndWithTheRun
				// (agent) and TestBackgroundLimitAndClose (agent/tools).
				t.Skip("headless denies the fixture's shell and wrapper lines: see TestBackgroundProcessesEndWithTheRun")
			}
			s, err := scripted.Load(filepath.Join("..", "..", "testdata", "hostile", "background-escapes.json"))
			if err != nil {
				t.Fatal(err)
			}
			s.Turns[len(s.Turns)-1].Delay = scripted.Duration(3 * time.Second) // time to look at the spool while they run
			srv, err := scripted.Start("127.0.0.1:0", s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			c := &cli{workspace: filepath.Join(t.TempDir(), "sample"), store: filepath.Join(t.TempDir(), "s.db"), srv: srv}
			os.CopyFS(c.workspace, os.DirFS("../../testdata/workspaces/sample"))
			mark := bgMarker(t)
			args := []string{"run", "--no-daemon", "--json"}
			for _, rule := range []string{"setsid *", "sh *", "sleep *", "echo *", "nohup *", "trap *", "wait", "yes *"} {
				args = append(args, "--allow", rule)
			}
			cmd := c.command(append(args, "leave something running")...)
			cmd.Env = append(cmd.Env, mark)
			if iso == sandbox.Snapshot {
				cmd.Env = append(cmd.Env, sandbox.IsolationEnv+"=snapshot")
			}
			biggest, stop := make(chan int64, 1), make(chan struct{})
			go func() { biggest <- watchSpool(t, c.store+".spool", stop) }()
			out, code := runCmd(t, cmd)
			close(stop)
			evs, res := jsonLines(t, out)
			if code != 0 || res["status"] != "done" {
				t.Fatalf("exit %d: %s", code, out)
			}
			ends := toolEnds(evs)
			msgs := toolMessages(srv)
			for _, id := range []string{"call_setsid", "call_fork", "call_term", "call_flood"} {
				started := strings.Contains(msgs[id], "in the background")
				if started != (iso == sandbox.Namespaces) {
					t.Errorf("%s under %s: %s", id, iso, msgs[id])
				}
				if iso == sandbox.Snapshot && (ends[id]["ok"] != false || !strings.Contains(msgs[id], "outlive its run")) {
					t.Errorf("%s under snapshot was not refused for the right reason: %s", id, msgs[id])
				}
			}
			if iso == sandbox.Namespaces {
				if m := msgs["call_fifth"]; !strings.Contains(m, "at most 4") {
					t.Errorf("the fifth: %s", m)
				}
				if n := <-biggest; n == 0 || n > tools.DefaultBackgroundOutput {
					t.Errorf("the output files held %d bytes at most (bound %d)", n, tools.DefaultBackgroundOutput)
				}
			}
			if ps := processesWith(mark); len(ps) > 0 {
				t.Fatalf("left running after the run: %v", ps)
			}
			noBackgroundFiles(t, c.store)
		})
	}
}

// A cancelled run (SIGINT) ends its background processes before it exits.
func TestHeadlessCancelEndsBackground(t *testing.T) {
	requireNamespaces(t)
	c := newCLI(t,
		turnOf(toolCall("call_bg", "run_command", map[string]any{"command": "setsid sleep 904 & sleep 905", "background": true})),
		turnOf(toolCall("call_fg", "run_command", map[string]any{"command": "sleep 906"})),
		scripted.Turn{Text: "never"})
	mark := bgMarker(t)
	cmd := c.command("run", "--no-daemon", "--json", "--allow", "sleep *", "--allow", "setsid sleep 904 & sleep 905", "wait a while")
	cmd.Env = append(cmd.Env, mark)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !hasAll(processesWith(mark), "sleep 904", "sleep 905", "sleep 906") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the commands did not start: %v\n%s\n%s", processesWith(mark), o.String(), e.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit %d, want 130 (cancelled)\n%s\n%s", code, o.String(), e.String())
	}
	if ps := processesWith(mark); len(ps) > 0 {
		t.Fatalf("left running after the cancelled run: %v", ps)
	}
}

func hasAll(ps []string, subs ...string) bool {
	all := strings.Join(ps, "\n")
	for _, s := range subs {
		if !strings.Contains(all, s) {
			return false
		}
	}
	return true
}

func requireNamespaces(t *testing.T) {
	t.Helper()
	sb, err := sandbox.New(true)
	if err != nil || sb.ABI() == 0 {
		t.Skip("no Landlock here")
	}
	if sb.Isolation(sandbox.Policy{Mode: sandbox.WorkspaceWrite, Root: t.TempDir()}) != sandbox.Namespaces {
		t.Skip("namespaces are refused here")
	}
}

func runCmd(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	if cmd.ProcessState.ExitCode() != 0 {
		t.Logf("stderr: %s", e.String())
	}
	return o.String(), cmd.ProcessState.ExitCode()
}

// watchSpool samples the background output files under dir until stop is
// closed, checks their mode, and returns the most they held at once.
func watchSpool(t *testing.T, dir string, stop <-chan struct{}) int64 {
	var most int64
	for {
		select {
		case <-stop:
			return most
		case <-time.After(20 * time.Millisecond):
		}
		var sum int64
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "bg-") {
				if fi, err := d.Info(); err == nil {
					if fi.Mode().Perm() != 0o600 {
						t.Errorf("%s has mode %v", p, fi.Mode())
					}
					sum += fi.Size()
				}
			}
			return nil
		})
		most = max(most, sum)
	}
}

// noBackgroundFiles fails when background output is left beside the store.
func noBackgroundFiles(t *testing.T, store string) {
	t.Helper()
	filepath.WalkDir(store+".spool", func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), "bg-") {
			t.Errorf("background output left: %s", p)
		}
		return nil
	})
}

// Headless, with the project's network off (the default): a background
// server listens on its own network namespace's loopback, which another
// command of the run does not reach (curl retries for ten seconds and
// fails to connect) while the server's output shows it serving.
func TestHeadlessBackgroundServerNetworkOff(t *testing.T) {
	requireNamespaces(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c := newCLI(t,
		turnOf(toolCall("call_serve", "run_command", map[string]any{"command": fmt.Sprintf("python3 -u -m http.server %d --bind 127.0.0.1", port), "background": true})),
		turnOf(toolCall("call_fetch", "run_command", map[string]any{"command": fmt.Sprintf("curl -s --max-time 2 --retry 10 --retry-delay 1 --retry-connrefused http://127.0.0.1:%d/hello.txt", port)})),
		turnOf(toolCall("call_log", "process_output", map[string]any{"id": "p1"})),
		scripted.Turn{Text: "Could not reach it."})
	os.WriteFile(filepath.Join(c.workspace, "hello.txt"), []byte("hello from the project\n"), 0o644)
	mark := bgMarker(t)
	cmd := c.command("run", "--no-daemon", "--json", "--allow", "python3 *", "--allow", "curl *", "serve and fetch")
	cmd.Env = append(cmd.Env, mark)
	out, code := runCmd(t, cmd)
	if _, res := jsonLines(t, out); code != 0 || res["status"] != "done" {
		t.Fatalf("exit %d: %s", code, out)
	}
	msgs := toolMessages(c.srv)
	if m := msgs["call_serve"]; !strings.Contains(m, "started p1 in the background") {
		t.Fatalf("start: %s", m)
	}
	if m := msgs["call_fetch"]; strings.Contains(m, "hello from the project") || !strings.Contains(m, "exit status 7") {
		t.Fatalf("another command reached the server with the network off: %s", m)
	}
	if m := msgs["call_log"]; !strings.Contains(m, "Serving HTTP on 127.0.0.1 port") {
		t.Fatalf("the server did not start, so the test shows nothing: %s", m)
	}
	if ps := processesWith(mark); len(ps) > 0 {
		t.Fatalf("left running: %v", ps)
	}
}
