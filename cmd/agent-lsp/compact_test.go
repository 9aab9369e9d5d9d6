//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// fillStore writes n sessions of big messages to a new store at path, all
// but keep of them last updated two days ago.
func fillStore(t *testing.T, path string, n, keep int) {
	t.Helper()
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for s := 0; s < n; s++ {
		id := fmt.Sprintf("s-old-%03d", s)
		var ops []store.Op
		for i := 0; i < 30; i++ {
			body, _ := json.Marshal(map[string]string{"content": strings.Repeat(fmt.Sprintf("session %d message %d ", s, i), 60)})
			ops = append(ops, store.Op{Kind: store.OpUpsert, ID: fmt.Sprintf("m%d", i), Body: body})
		}
		updated := time.Now().Add(-48 * time.Hour)
		if s < keep {
			updated = time.Now()
		}
		if err := db.Put(context.Background(), store.Checkpoint{Thread: id, Step: 1, Status: store.StatusDone,
			Lists: map[string][]store.Op{"messages": ops}, Index: &store.Session{ID: id, Project: "sample", Status: store.StatusDone, Title: "old", Created: updated, Updated: updated}}); err != nil {
			t.Fatal(err)
		}
	}
}

var compacted = regexp.MustCompile(`compacted (\S+): ([\d.]+) (\w+) -> ([\d.]+) (\w+)`)

// sessions prune frees most of the file and compacts it, in the daemon that
// holds the store while a window is connected; the window's sessions and
// new runs go on; sessions compact says the sizes.
func TestSessionsPruneCompacts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	fillStore(t, path, 80, 2)
	stopDaemon(t, path)
	srv := model(t, scripted.Script{Turns: []scripted.Turn{{Text: "before"}, {Text: "after"}}})
	w := openWindow(t, "", daemonEnv(path, srv), map[string]string{"sample": sample(t)})
	var r result
	if err := w.command("agent.run", map[string]any{"prompt": "before the prune"}, &r); err != nil || r.Reply != "before" {
		t.Fatalf("%+v %v", r, err)
	}
	prune := exec.Command(binary, "sessions", "prune", "--older-than", "24h", "--store", path)
	prune.Env = append(os.Environ(), "AGENT_LSP_DAEMON=on")
	out, err := prune.CombinedOutput()
	m := compacted.FindStringSubmatch(string(out))
	if err != nil || !strings.Contains(string(out), "deleted 78 session(s)") || m == nil || m[1] != path {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	fi, _ := os.Stat(path)
	if fi.Size() > 2<<20 {
		t.Fatalf("the file is %d bytes after the compaction:\n%s", fi.Size(), out)
	}
	if err := w.command("agent.run", map[string]any{"prompt": "after the prune", "session": r.Session}, &r); err != nil || r.Reply != "after" {
		t.Fatalf("a run after the compaction: %+v %v", r, err)
	}
	list := exec.Command(binary, "sessions", "--store", path)
	list.Env = append(os.Environ(), "AGENT_LSP_DAEMON=on")
	out, err = list.CombinedOutput()
	if err != nil || strings.Count(string(out), "s-") != 3 {
		t.Fatalf("sessions after the compaction: %v\n%s", err, out)
	}
	again := exec.Command(binary, "sessions", "compact", "--store", path)
	again.Env = append(os.Environ(), "AGENT_LSP_DAEMON=on")
	if out, err = again.CombinedOutput(); err != nil || compacted.FindStringSubmatch(string(out)) == nil {
		t.Fatalf("sessions compact: %v\n%s", err, out)
	}
}
