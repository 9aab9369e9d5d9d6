package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/scripted"
	"github.com/agent-lsp/agent-lsp/store"
)

// storedMessage is a message as the store keeps it.
type storedMessage struct {
	ID         string `json:"id"`
	Role       string `json:"role"`
	ToolCallID string `json:"toolCallId"`
	ToolCalls  []struct {
		ID string `json:"id"`
	} `json:"toolCalls"`
}

// storedConversation loads the messages of session id from the store file
// at path and fails t unless they make a conversation a provider accepts
// (validConversation). It returns the tool messages' call IDs in order.
func storedConversation(t *testing.T, path, id string) (answered []string) {
	t.Helper()
	answered, err := conversation(path, id)
	if err != nil {
		t.Fatal(err)
	}
	return answered
}

// validConversation says what makes the stored conversation of session id
// one a provider refuses: a message twice, a tool message that answers no
// call of an earlier AI message, or answers one twice, a call without an
// answer but in the last AI message (a resumed run makes them).
func validConversation(path, id string) error {
	_, err := conversation(path, id)
	return err
}

func conversation(path, id string) (answered []string, err error) {
	db, err := store.Open(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st, err := db.Load(context.Background(), id, "")
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	open := map[string]bool{} // calls of AI messages so far without an answer
	var last *storedMessage
	for i, it := range st.Lists["messages"] {
		var m storedMessage
		if err := json.Unmarshal(it.Body, &m); err != nil {
			return nil, err
		}
		if ids[m.ID] {
			return nil, fmt.Errorf("message %s stored twice", m.ID)
		}
		ids[m.ID] = true
		switch m.Role {
		case "ai":
			if len(open) > 0 {
				return nil, fmt.Errorf("message %d: an AI message while calls %v have no answer", i, open)
			}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
			last = &m
		case "tool":
			if !open[m.ToolCallID] {
				return nil, fmt.Errorf("message %d: an orphan tool message (call %s)", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
			answered = append(answered, m.ToolCallID)
		}
	}
	if len(open) > 0 && (last == nil || len(last.ToolCalls) == 0) {
		return nil, fmt.Errorf("calls %v without an answer", open)
	}
	return answered, nil
}

// limitedStore is a folder for the store whose space runs out: a tmpfs of
// size bytes when the test may mount one (root), else the folder with the
// runs under RLIMIT_FSIZE; grow gives the space back.
type limitedStore struct {
	dir    string
	tmpfs  bool
	limitK int // RLIMIT_FSIZE of the runs in KiB, 0 for none
}

func newLimitedStore(t *testing.T, size int) *limitedStore {
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput(); err == nil {
			t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
			return &limitedStore{dir: dir, tmpfs: true}
		} else {
			t.Logf("no tmpfs (%v: %s): RLIMIT_FSIZE instead", err, out)
		}
	}
	return &limitedStore{dir: dir, limitK: size >> 10}
}

func (l *limitedStore) grow(t *testing.T) {
	if l.tmpfs {
		if out, err := exec.Command("mount", "-o", "remount,size=256m", l.dir).CombinedOutput(); err != nil {
			t.Fatalf("remount: %v: %s", err, out)
		}
	}
	l.limitK = 0
}

// command runs agent-lsp with args, under the store's file size limit.
func (l *limitedStore) command(c *cli, args ...string) *exec.Cmd {
	cmd := c.command(args...)
	if l.limitK > 0 {
		// ulimit -f counts 512-byte blocks in sh.
		cmd = exec.Command("sh", append([]string{"-c", fmt.Sprintf(`ulimit -f %d && exec "$@"`, l.limitK*2), "sh", binary}, args...)...)
		cmd.Env, cmd.Dir = c.command().Env, c.workspace
	}
	return cmd
}

// With the store's disk full (a small tmpfs, or RLIMIT_FSIZE) a run fails
// clearly, in sync and batched mode; the stored conversation is valid (no
// orphan tool message, no call without its AI message), and once space
// returns the session resumes to its end with every call answered once.
func TestStoreDiskFull(t *testing.T) {
	const calls = 60
	noise := make([]byte, 18<<10)
	rand.Read(noise)
	text := base64.StdEncoding.EncodeToString(noise) // 24 KB that compression does not shrink
	var lines []string
	for len(text) > 0 {
		n := min(76, len(text))
		lines, text = append(lines, text[:n]), text[n:]
	}
	turns := make([]scripted.Turn, 0, calls+1)
	for i := range calls {
		// Big AI messages and small tool results, then the other way
		// round: a later small write may fit where an earlier big one did
		// not.
		tc := call("read_file", map[string]any{"path": "greet.go"})
		say := lines[i%len(lines)] + strings.Join(lines, "")[:16<<10]
		if i%2 == 1 {
			tc, say = call("read_file", map[string]any{"path": "noise.txt"}), ""
		}
		tc.ID = fmt.Sprintf("call_%03d", i)
		turns = append(turns, scripted.Turn{Text: say, Chunk: 4096, ToolCalls: []scripted.ToolCall{tc}})
	}
	turns = append(turns, scripted.Turn{Text: "finished"})
	for _, mode := range []string{"sync", "batched"} {
		t.Run(mode, func(t *testing.T) {
			c := newCLI(t)
			c.srv.SetScript(scripted.Script{Turns: turns, ByHistory: true})
			os.WriteFile(filepath.Join(c.workspace, "noise.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			lim := newLimitedStore(t, 640<<10)
			c.store = filepath.Join(lim.dir, "s.db")
			cmd := lim.command(c, "run", "--workspace", c.workspace, "--durability", mode, "--max-steps", "400", "--json", "read a lot")
			out, _ := cmd.Output()
			_, res := jsonLines(t, string(out))
			errText, _ := res["error"].(string)
			if res["status"] != "failed" || !(strings.Contains(errText, "no space left on device") || strings.Contains(errText, "file too large")) {
				t.Fatalf("the run on a full disk: %v", res)
			}
			session := res["session"].(string)
			lim.grow(t)
			answered := storedConversation(t, c.store, session)
			t.Logf("%s: the run failed after %d of %d calls were stored: %s", mode, len(answered), calls, errText)
			if len(answered) >= calls {
				t.Fatalf("every call was stored: the disk was not full")
			}
			cmd = lim.command(c, "run", "--workspace", c.workspace, "--durability", mode, "--max-steps", "400", "--json", "--resume", session)
			out, _ = cmd.Output()
			_, res = jsonLines(t, string(out))
			if res["status"] != "done" || res["reply"] != "finished" {
				t.Fatalf("resume after space returned: %v", res)
			}
			answered = storedConversation(t, c.store, session)
			if len(answered) != calls {
				t.Fatalf("%d calls answered after resume, want each of %d once", len(answered), calls)
			}
			for i, id := range answered {
				if id != fmt.Sprintf("call_%03d", i) {
					t.Fatalf("answer %d is to %s", i, id)
				}
			}
		})
	}
}
