//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
)

// TestRunOnDamagedStore: a run whose store file is damaged does not start:
// the file is salvaged (the damaged one kept aside), the run exits 2 with
// one line saying so and how to go on, and no request reaches the model;
// run again, it works on the salvaged store. Both ways a run serves its
// store itself: serving the daemon's address (no daemon runs), and
// --no-daemon.
func TestRunOnDamagedStore(t *testing.T) {
	for _, mode := range []string{"serving", "no-daemon"} {
		t.Run(mode, func(t *testing.T) {
			c := newCLI(t, scripted.Turn{Text: "ok"})
			fillStore(t, c.store, 6, 6)
			db, err := bolt.Open(c.store, 0o600, &bolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			var used int64
			db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
			db.Close()
			if err := os.Truncate(c.store, used-4096); err != nil { // the newest commit's pages are not all there
				t.Fatal(err)
			}
			args := []string{"run", "--json", "hi"}
			if mode == "no-daemon" {
				args = []string{"run", "--json", "--no-daemon", "hi"}
			}
			out, errOut, code := c.run(t, "", args...)
			if code != 2 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "agent-lsp run: the session store: store "+c.store+" is damaged") ||
				!strings.Contains(lines[0], "run it again") || !strings.Contains(lines[0], c.store+".corrupt-") {
				t.Fatalf("stderr:\n%s", errOut)
			}
			if _, res := jsonLines(t, out); res["status"] != "failed" || !strings.Contains(res["error"].(string), "damaged") {
				t.Fatalf("result %v", res)
			}
			if n := len(c.srv.Requests()); n != 0 {
				t.Fatalf("%d request(s) reached the model", n)
			}
			if aside, _ := filepath.Glob(c.store + ".corrupt-*"); len(aside) != 1 {
				t.Fatalf("the damaged file was not kept aside: %v", aside)
			}
			if out, errOut, code := c.run(t, "", args...); code != 0 {
				t.Fatalf("the run after the salvage: exit %d\n%s\n%s", code, out, errOut)
			}
		})
	}
}

// TestRunOnLockedStoreNoDaemon: with --no-daemon, a store file another
// process holds is a store the run cannot use: exit 2 at once, saying so,
// rather than a run whose session is silently not stored.
func TestRunOnLockedStoreNoDaemon(t *testing.T) {
	c := newCLI(t, scripted.Turn{Text: "ok"})
	fillStore(t, c.store, 1, 1)
	db, err := bolt.Open(c.store, 0o600, nil) // holds the file's lock
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out, errOut, code := c.run(t, "", "run", "--no-daemon", "hi")
	if code != 2 || !strings.HasPrefix(errOut, "agent-lsp run: the session store: ") || strings.Count(errOut, "\n") != 1 || out != "" {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if n := len(c.srv.Requests()); n != 0 {
		t.Fatalf("%d request(s) reached the model", n)
	}
}

// TestBuiltinSlashHeadless: a built-in slash command prints its answer and
// says it answered without the model (not "done after 0 steps"); it needs no
// API key, and /model without one lists nothing rather than asking the
// endpoint.
func TestBuiltinSlashHeadless(t *testing.T) {
	c := newCLI(t)
	out, errOut, code := c.run(t, "", "run", "/help")
	if code != 0 || !strings.Contains(out, "/model") || errOut != "/help: answered by agent-lsp, without the model\n" {
		t.Fatalf("/help: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	if n := len(c.srv.Requests()); n != 0 {
		t.Fatalf("/help made %d request(s)", n)
	}

	// No key for OpenAI's endpoint: the built-ins still answer, and nothing
	// leaves (every request would go through the proxy, which refuses).
	proxy := refusingProxy(t)
	for _, prompt := range []string{"/help", "/model"} {
		cmd := noKeyCommand(t, proxy.url, "run", prompt)
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s without a key: %v\n%s", prompt, err, e.String())
		}
		if prompt == "/model" && !strings.Contains(o.String(), "OPENAI_API_KEY is not set") {
			t.Fatalf("/model without a key: %q", o.String())
		}
	}
	if n := proxy.conns.Load(); n != 0 {
		t.Fatalf("%d connection(s) went out", n)
	}
}
