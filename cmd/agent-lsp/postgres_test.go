//go:build unix

package main

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store/postgres/pgtest"
)

// The CI recipe of docs/postgres.md on a shared database: a headless run stores its
// session there, and another process (a later job on another runner)
// continues it and lists it; nothing needs a daemon.
func TestPostgresCIRecipe(t *testing.T) {
	db := pgtest.FreshSchema(t)
	c := newCLI(t, scripted.Turn{Text: "Fixed in job one."}, scripted.Turn{Text: "Continued in job two."})
	c.store = db
	out, errOut, code := c.run(t, "", "run", "--json", "--no-daemon", "fix the failing test")
	_, res := jsonLines(t, out)
	if code != 0 || res["status"] != "done" {
		t.Fatalf("job one: %d %v\n%s", code, res, errOut)
	}
	session := res["session"].(string)
	out, errOut, code = c.run(t, "", "run", "--json", "--session", session, "now add a test for it")
	if _, res = jsonLines(t, out); code != 0 || res["reply"] != "Continued in job two." {
		t.Fatalf("job two: %d %v\n%s", code, res, errOut)
	}
	last := c.srv.Requests()[len(c.srv.Requests())-1]
	var history bool
	for _, m := range last.Messages {
		history = history || strings.Contains(m.Content, "fix the failing test")
	}
	if !history {
		t.Fatal("job two's request lacks job one's conversation")
	}
	list, errOut, code := c.run(t, "", "sessions", "--store", db)
	if code != 0 || !strings.Contains(list, session) {
		t.Fatalf("sessions: %d\n%s%s", code, list, errOut)
	}
	if strings.Contains(list+errOut, "password") {
		t.Fatalf("the URL's password shows:\n%s%s", list, errOut)
	}
}

// A database that cannot be reached stops a headless run before it starts
// (exit 2), naming the database without its password; doctor says so too.
func TestPostgresUnreachable(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "never"})
	c.store = "postgres://agent:s3cretpw@127.0.0.1:1/agent_lsp?sslmode=disable"
	out, errOut, code := c.run(t, "", "run", "--json", "hello")
	_, res := jsonLines(t, out)
	if code != 2 || !strings.Contains(res["error"].(string), "127.0.0.1:1") {
		t.Fatalf("a run on an unreachable database: exit %d, %v\n%s", code, res, errOut)
	}
	if strings.Contains(out+errOut, "s3cretpw") {
		t.Fatalf("the password shows:\n%s%s", out, errOut)
	}
	if len(c.srv.Requests()) != 0 {
		t.Fatal("the run started")
	}
	doctor, errOut, _ := c.run(t, "", "doctor", "--json")
	if !strings.Contains(doctor, "127.0.0.1:1") || strings.Contains(doctor+errOut, "s3cretpw") {
		t.Fatalf("doctor:\n%s%s", doctor, errOut)
	}
}

// A session runs in one process at a time: a second process is refused,
// naming the holder; once the holder stops renewing its lease (frozen by
// SIGSTOP, as a runner that vanished), the session resumes elsewhere.
func TestPostgresOneRunnerAtATime(t *testing.T) {
	db := pgtest.FreshSchema(t)
	c := newCLI(t,
		scripted.Turn{Text: "Sleeping.", ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 600"})}},
		scripted.Turn{Text: "Resumed elsewhere."})
	c.store = db
	holder := c.command("run", "--json", "--allow", "sleep *", "sleep on it")
	var out bytes.Buffer
	holder.Stdout = &out
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill() })
	var session string
	deadline := time.Now().Add(60 * time.Second)
	for session == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no session started:\n%s", out.String())
		}
		list, _, _ := c.run(t, "", "sessions", "--store", db)
		for _, f := range strings.Fields(list) {
			if strings.HasPrefix(f, "s-") {
				session = f
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the run is in its command now
	if list, _, _ := c.run(t, "", "sessions", "--store", db); !strings.Contains(lineOf(list, session), "running") {
		t.Fatalf("sessions while another process runs it:\n%s", list)
	}
	res, errOut, code := c.run(t, "", "run", "--json", "--resume", session)
	if _, r := jsonLines(t, res); code == 0 || !strings.Contains(r["error"].(string), "running elsewhere") || !strings.Contains(r["error"].(string), "pid") {
		t.Fatalf("a second runner on the running session: %d %v\n%s", code, r, errOut)
	}
	if err := holder.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(17 * time.Second) // past the lease's 15 s
	res, errOut, code = c.run(t, "", "run", "--json", "--resume", session)
	if _, r := jsonLines(t, res); code != 0 || r["reply"] != "Resumed elsewhere." {
		t.Fatalf("resuming after the holder froze: %d %v\n%s", code, r, errOut)
	}
	// Thawed, the old holder finds its lease lost and stops its run: it
	// never writes over the session the other runner continued.
	holder.Process.Signal(syscall.SIGCONT)
	exited := make(chan error, 1)
	go func() { exited <- holder.Wait() }()
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("the old holder's run went on after it lost the lease")
	}
	if _, r := jsonLines(t, out.String()); r["status"] != "cancelled" && r["status"] != "failed" {
		t.Fatalf("the old holder's run ended %v", r)
	}
	// Its last writes were fenced off: the session is as the other runner left it.
	if list, _, _ := c.run(t, "", "sessions", "--store", db); !strings.Contains(lineOf(list, session), "done") {
		t.Fatalf("the session after the old holder ended:\n%s", list)
	}
}

// lineOf returns the line of text that holds id.
func lineOf(text, id string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, id) {
			return l
		}
	}
	return ""
}

// A run killed on this machine (SIGKILL, or dead with the database down,
// unable to release its lease) does not block the next run for the
// lease's 15 s: its process is gone, so the lease is taken over at once.
func TestPostgresKilledRunResumesAtOnce(t *testing.T) {
	db := pgtest.FreshSchema(t)
	c := newCLI(t,
		scripted.Turn{Text: "Sleeping.", ToolCalls: []scripted.ToolCall{call("run_command", map[string]any{"command": "sleep 600"})}},
		scripted.Turn{Text: "Resumed at once."})
	c.store = db
	holder := c.command("run", "--json", "--allow", "sleep *", "sleep on it")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill() })
	var session string
	for deadline := time.Now().Add(60 * time.Second); session == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no session started")
		}
		list, _, _ := c.run(t, "", "sessions", "--store", db)
		if l := lineOf(list, "s-"); strings.Contains(l, "running") {
			session = strings.Fields(l)[0]
		}
	}
	time.Sleep(500 * time.Millisecond) // the run is in its command now
	holder.Process.Kill()
	holder.Wait()
	start := time.Now()
	res, errOut, code := c.run(t, "", "run", "--json", "--resume", session)
	if _, r := jsonLines(t, res); code != 0 || r["reply"] != "Resumed at once." {
		t.Fatalf("resuming the killed run's session: %d %v\n%s", code, r, errOut)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the resume took %s: it waited for the dead run's lease", took)
	} else {
		t.Logf("resumed %s after the kill (the lease's ttl is 15 s)", took.Round(time.Millisecond))
	}
}
