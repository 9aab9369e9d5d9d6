package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// The crash workload: calls in turn edit a file (insert a line after an
// anchor: made twice, the line would be there twice), append to a file
// with a command, create a file, and read. One call per model turn; the
// model answers by history, so a resumed run is answered as the
// interrupted one was.
const (
	crashEdit = iota
	crashCommand
	crashCreate
	crashRead
)

func crashKind(i int) int { return i % 4 }

func crashWorkload(n int) scripted.Script {
	turns := make([]scripted.Turn, 0, n+1)
	for i := range n {
		var tc scripted.ToolCall
		switch crashKind(i) {
		case crashEdit:
			tc = call("edit_file", map[string]any{"path": "edits.txt", "old_text": fmt.Sprintf("anchor %d\n", i), "new_text": fmt.Sprintf("anchor %d\nline %d\n", i, i)})
		case crashCommand:
			tc = call("run_command", map[string]any{"command": fmt.Sprintf("echo cmd %d >> cmds.txt", i)})
		case crashCreate:
			tc = call("create_file", map[string]any{"path": fmt.Sprintf("new/%d.txt", i), "content": fmt.Sprintf("created %d\n", i)})
		default:
			tc = call("read_file", map[string]any{"path": "edits.txt"})
		}
		tc.ID = fmt.Sprintf("call_%03d", i)
		turns = append(turns, scripted.Turn{ToolCalls: []scripted.ToolCall{tc}})
	}
	turns = append(turns, scripted.Turn{Text: "all done"})
	return scripted.Script{Turns: turns, ByHistory: true}
}

// crashFiles writes the workload's starting files into ws.
func crashFiles(t *testing.T, ws string, n int) {
	var b strings.Builder
	for i := range n {
		if crashKind(i) == crashEdit {
			fmt.Fprintf(&b, "anchor %d\n", i)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, "edits.txt"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fullMessage is a stored message with what the checks read.
type fullMessage struct {
	ID         string `json:"id"`
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"toolCallId"`
}

// answers returns the content of each call's answer in the stored session.
func answers(t *testing.T, path, session string) map[string]string {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.Load(context.Background(), session, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range st.Lists["messages"] {
		var m fullMessage
		json.Unmarshal(it.Body, &m)
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// checkEffects checks the workspace against the transcript: no effect
// twice, and every effect the transcript reports made present once. It
// returns how many calls were settled as interrupted, and what is wrong.
func checkEffects(ws string, n int, ans map[string]string) (settled int, problems []string) {
	lines := func(name string) map[string]int {
		b, _ := os.ReadFile(filepath.Join(ws, name))
		n := map[string]int{}
		for _, l := range strings.Split(string(b), "\n") {
			n[l]++
		}
		return n
	}
	edits, cmds := lines("edits.txt"), lines("cmds.txt")
	for i := range n {
		id := fmt.Sprintf("call_%03d", i)
		a, ok := ans[id]
		if !ok {
			problems = append(problems, id+" has no answer")
			continue
		}
		if strings.Contains(a, "interrupted") {
			settled++
		}
		switch crashKind(i) {
		case crashEdit:
			c := edits[fmt.Sprintf("line %d", i)]
			if c > 1 || (strings.HasPrefix(a, "edited") && c != 1) {
				problems = append(problems, fmt.Sprintf("edit %s is in edits.txt %d times; its answer: %q", id, c, a))
			}
		case crashCommand:
			c := cmds[fmt.Sprintf("cmd %d", i)]
			if c > 1 || (strings.Contains(a, "exit status 0") && c != 1) {
				problems = append(problems, fmt.Sprintf("command %s ran %d times; its answer: %q", id, c, a))
			}
		case crashCreate:
			b, err := os.ReadFile(filepath.Join(ws, "new", strconv.Itoa(i)+".txt"))
			switch {
			case strings.Contains(a, "already exists"):
				problems = append(problems, fmt.Sprintf("create %s was run again: %q", id, a))
			case (err == nil && string(b) != fmt.Sprintf("created %d\n", i)) || (strings.HasPrefix(a, "created") && err != nil):
				problems = append(problems, fmt.Sprintf("create %s: file %q (%v); its answer: %q", id, b, err, a))
			}
		}
	}
	return settled, problems
}

// crashPoints is how many kills each mode gets, and crashCalls the
// workload's length: a short subset by default, the full review with
// AGENT_LSP_CRASH_POINTS=50 AGENT_LSP_CRASH_CALLS=120.
func crashPoints() (points, calls int) {
	points, calls = 1, 24
	if v, err := strconv.Atoi(os.Getenv("AGENT_LSP_CRASH_POINTS")); err == nil && v > 0 {
		points = v
	}
	if v, err := strconv.Atoi(os.Getenv("AGENT_LSP_CRASH_CALLS")); err == nil && v > 0 {
		calls = v
	}
	return points, calls
}

// TestKillAndResumeSideEffects kills a run of edits, appending commands,
// creates and reads with SIGKILL at seeded points (a seeded tool call,
// then a seeded delay of up to 4 ms), in each durability mode, in-process
// (`run --no-daemon`: the server) and through the daemon (the daemon is
// killed), then resumes the session from a new process: every call is
// answered once, the stored conversation is valid, no edit or command is
// made twice, and every effect the transcript reports is there once.
func TestKillAndResumeSideEffects(t *testing.T) {
	points, calls := crashPoints()
	for _, where := range []string{"server", "daemon"} {
		for _, mode := range []string{"sync", "batched", "exit"} {
			t.Run(where+"/"+mode, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(44, uint64(len(where)*10+len(mode))))
				settled, resumed, broken := 0, 0, 0
				for p := range points {
					target, delay := 1+rng.IntN(calls-1), time.Duration(rng.IntN(4000))*time.Microsecond
					s, r, problems := crashPoint(t, where, mode, calls, target, delay)
					settled += s
					if r {
						resumed++
					}
					if len(problems) > 0 {
						broken++
						t.Errorf("point %d (killed %v after tool call %d started): %d problems: %s", p, delay, target, len(problems), strings.Join(problems[:min(3, len(problems))], "; "))
					}
				}
				t.Logf("%s %s: %d kills (%d calls each): %d sessions resumed (the others were not stored yet and ran again), %d calls settled after the kill (made, or reported interrupted), %d kills broke a promise",
					where, mode, points, calls, resumed, settled, broken)
			})
		}
	}
}

// crashPoint runs the workload, kills it once the target'th tool call has
// started and delay has passed, resumes it, and checks the outcome.
func crashPoint(t *testing.T, where, mode string, calls, target int, delay time.Duration) (settled int, resumed bool, problems []string) {
	t.Helper()
	c := newCLI(t)
	c.srv.SetScript(crashWorkload(calls))
	crashFiles(t, c.workspace, calls)
	flags := []string{"run", "--workspace", c.workspace, "--durability", mode, "--allow", "echo *", "--max-steps", strconv.Itoa(3 * calls), "--json"}
	env := c.command().Env
	var daemonPid int
	if where == "daemon" {
		stopDaemon(t, c.store)
		w := openWindow(t, "", append(daemonEnv(c.store, c.srv), "AGENT_LSP_DAEMON_IDLE=60s"), map[string]string{"sample": c.workspace})
		_ = w
		st, ok := status(t, c.store)
		if !ok {
			t.Fatal("no daemon")
		}
		daemonPid = st.Pid
		env = append(env, "AGENT_LSP_DAEMON=on")
	} else {
		flags = append(flags, "--no-daemon")
	}
	cmd := exec.Command(binary, append(flags, "work")...)
	cmd.Env, cmd.Dir = env, c.workspace
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	session, started := "", 0
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var e map[string]any
			json.Unmarshal(sc.Bytes(), &e)
			if s, ok := e["session"].(string); ok && session == "" {
				session = s
			}
			if e["type"] == "tool.start" {
				if started++; started == target {
					time.Sleep(delay)
					pid := cmd.Process.Pid
					if daemonPid != 0 {
						pid = daemonPid
					}
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		cmd.Wait()
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the run did not end: %s", stderr.String())
	}
	if started < target {
		t.Fatalf("the run ended after %d tool calls, before the kill: %s", started, stderr.String())
	}
	// A new process resumes the session; one not stored yet runs again.
	resumeFlags := append(append([]string(nil), flags...), "--no-daemon")
	out, errOut, _ := runCLI(t, c, append(resumeFlags, "--resume", session))
	_, res := jsonLines(t, out)
	if res["status"] != "done" && strings.Contains(fmt.Sprint(res["error"]), "unknown session") {
		out, errOut, _ = runCLI(t, c, append(resumeFlags, "work"))
		_, res = jsonLines(t, out)
		session = fmt.Sprint(res["session"])
	} else {
		resumed = true
	}
	if res["status"] != "done" || res["reply"] != "all done" {
		t.Fatalf("after the kill: %v\n%s", res, errOut)
	}
	if err := validConversation(c.store, session); err != nil {
		problems = append(problems, err.Error())
	}
	settled, more := checkEffects(c.workspace, calls, answers(t, c.store, session))
	return settled, resumed, append(problems, more...)
}

func runCLI(t *testing.T, c *cli, args []string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := c.command(args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}
