//go:build unix

package hooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseShapes(t *testing.T) {
	plain := `{"pre_tool": [{"matcher": "run_command", "command": "./check.sh", "timeout": 5}],
		"post_tool": [{"match": "edit_file|create_file", "command": "gofmt -l ."}, {"command": "echo all"}],
		"prompt": [{"command": "date"}], "stop": [{"command": "notify-send done"}]}`
	wrapped := `{"hooks": ` + plain + `}`
	for name, doc := range map[string]string{"plain": plain, "wrapped": wrapped} {
		t.Run(name, func(t *testing.T) {
			cfg := Parse([]byte(doc), "hooks.json", SourceUser)
			if len(cfg.Errors) != 0 {
				t.Fatalf("errors: %v", cfg.Errors)
			}
			want := []Hook{
				{Event: Prompt, Command: "date"},
				{Event: PreTool, Matcher: "run_command", Command: "./check.sh", Timeout: 5 * time.Second},
				{Event: PostTool, Matcher: "edit_file|create_file", Command: "gofmt -l ."},
				{Event: PostTool, Command: "echo all"},
				{Event: Stop, Command: "notify-send done"},
			}
			if len(cfg.Hooks) != len(want) {
				t.Fatalf("got %+v", cfg.Hooks)
			}
			for i, w := range want {
				w.Source, w.Origin = SourceUser, "hooks.json"
				if cfg.Hooks[i] != w {
					t.Errorf("hook %d: got %+v, want %+v", i, cfg.Hooks[i], w)
				}
			}
		})
	}
}

// An entry that cannot be used is left out with an error, never read as
// a hook that matches every tool.
func TestParseRefusesWhatItCannotUse(t *testing.T) {
	cases := map[string]string{
		"unknown field":       `{"pre_tool": [{"matchr": "run_command", "command": "x"}]}`,
		"Claude Code's shape": `{"pre_tool": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}`,
		"no command":          `{"pre_tool": [{"matcher": "run_command"}]}`,
		"empty command":       `{"stop": [{"command": "  "}]}`,
		"bad matcher":         `{"pre_tool": [{"matcher": "[run", "command": "x"}]}`,
		"matcher on stop":     `{"stop": [{"matcher": "run_command", "command": "x"}]}`,
		"negative timeout":    `{"pre_tool": [{"command": "x", "timeout": -1}]}`,
		"string timeout":      `{"pre_tool": [{"command": "x", "timeout": "30"}]}`,
		"unknown event":       `{"PreToolUse": [{"command": "x"}]}`,
		"not a list":          `{"pre_tool": {"command": "x"}}`,
		"not an object":       `[1, 2]`,
		"matcher and match":   `{"pre_tool": [{"matcher": "a", "match": "b", "command": "x"}]}`,
	}
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := Parse([]byte(doc), ".agents/hooks.json", SourceProject)
			if len(cfg.Hooks) != 0 || len(cfg.Errors) != 1 || !strings.HasPrefix(cfg.Errors[0], ".agents/hooks.json: ") {
				t.Fatalf("hooks %+v, errors %q", cfg.Hooks, cfg.Errors)
			}
		})
	}
	// The entry beside a bad one still counts.
	cfg := Parse([]byte(`{"pre_tool": [{"command": "x", "oops": 1}, {"command": "y"}]}`), "f", SourceUser)
	if len(cfg.Hooks) != 1 || cfg.Hooks[0].Command != "y" || len(cfg.Errors) != 1 || !strings.Contains(cfg.Errors[0], `unknown field "oops"`) {
		t.Fatalf("%+v", cfg)
	}
}

func TestMatches(t *testing.T) {
	h := Hook{Event: PreTool, Matcher: "edit_file|mcp__*"}
	for tool, want := range map[string]bool{"edit_file": true, "mcp__github__x": true, "run_command": false, "edit_files": false} {
		if h.Matches(tool) != want {
			t.Errorf("%s: %v", tool, !want)
		}
	}
	if !(Hook{}).Matches("anything") {
		t.Error("no matcher must match every tool")
	}
}

func TestHashBindsTheDefinition(t *testing.T) {
	a := Parse([]byte(`{"pre_tool": [{"command": "./check.sh"}]}`), "a", SourceProject).Hooks
	same := Parse([]byte(`{"hooks": {"pre_tool": [{"command": "./check.sh"}]}}`), "b", SourceProject).Hooks
	changed := Parse([]byte(`{"pre_tool": [{"command": "./check.sh; curl evil"}]}`), "a", SourceProject).Hooks
	added := Parse([]byte(`{"pre_tool": [{"command": "./check.sh"}], "stop": [{"command": "x"}]}`), "a", SourceProject).Hooks
	h := Hash(a)
	if !IsHash(h) || Hash(same) != h || Hash(changed) == h || Hash(added) == h {
		t.Fatal("the hash must follow what runs, only")
	}
	if !Approves([]string{h}, h) || !Approves([]string{"*"}, h) || !Approves([]string{"repo@" + strings.ToUpper(h)}, h) || Approves([]string{Hash(changed)}, h) || Approves(nil, h) {
		t.Fatal("Approves")
	}
}

// set runs hooks parsed from doc in dir with a log it returns.
func set(t *testing.T, doc string, timeout time.Duration) (*Set, *[]string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := Parse([]byte(doc), "hooks.json", SourceUser)
	if len(cfg.Errors) > 0 {
		t.Fatal(cfg.Errors)
	}
	var mu sync.Mutex
	var logs []string
	s := &Set{Timeout: timeout, Log: func(m string) { mu.Lock(); logs = append(logs, m); mu.Unlock() }}
	s.Add(cfg.Hooks, Exec{Dir: dir, Env: []string{"PATH=" + os.Getenv("PATH"), "VISIBLE=yes"}})
	return s, &logs, dir
}

func TestRunPreToolBlocks(t *testing.T) {
	s, logs, dir := set(t, `{"pre_tool": [
		{"matcher": "run_command", "command": "echo first failing >&2; exit 1"},
		{"matcher": "run_command", "command": "cat > input.json; echo 'no commands on Fridays' >&2; exit 2"},
		{"matcher": "run_command", "command": "touch after"},
		{"matcher": "read_file", "command": "touch wrong-tool"}]}`, 0)
	out := s.Run(context.Background(), Input{Event: PreTool, Session: "s-1", Project: "p", Tool: "run_command", Arguments: json.RawMessage(`{"command":"ls"}`)})
	if !out.Blocked || out.Reason != "no commands on Fridays" || out.By.Command == "" {
		t.Fatalf("%+v", out)
	}
	if len(*logs) != 1 || !strings.Contains((*logs)[0], "exit status 1: first failing") {
		t.Fatalf("logs %q", *logs)
	}
	for _, f := range []string{"after", "wrong-tool"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s ran", f)
		}
	}
	var in map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "input.json"))
	if err := json.Unmarshal(b, &in); err != nil || in["event"] != "pre_tool" || in["tool"] != "run_command" || in["session"] != "s-1" ||
		in["project"] != "p" || in["cwd"] != dir || in["arguments"].(map[string]any)["command"] != "ls" {
		t.Fatalf("stdin %s: %v", b, err)
	}
}

func TestRunPromptPostAndStop(t *testing.T) {
	s, logs, dir := set(t, `{"prompt": [{"command": "echo on branch main; echo $VISIBLE"}],
		"post_tool": [{"command": "cat >> log.jsonl; echo >> log.jsonl"}, {"command": "echo 'gofmt: main.go' >&2; exit 2"}],
		"stop": [{"command": "cat > stop.json; exit 2"}]}`, 0)
	out := s.Run(context.Background(), Input{Event: Prompt, Prompt: "fix it"})
	if out.Blocked || len(out.Context) != 1 || out.Context[0].Text != "on branch main\nyes" {
		t.Fatalf("%+v", out)
	}
	res, isErr := "ok", false
	out = s.Run(context.Background(), Input{Event: PostTool, Tool: "edit_file", Arguments: json.RawMessage(`not json`), Result: &res, IsError: &isErr})
	if out.Blocked || len(out.Feedback) != 1 || out.Feedback[0].Text != "gofmt: main.go" {
		t.Fatalf("%+v", out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "log.jsonl"))
	if !strings.Contains(string(b), `"arguments":"not json"`) || !strings.Contains(string(b), `"result":"ok"`) {
		t.Fatalf("log %s", b)
	}
	out = s.Run(context.Background(), Input{Event: Stop, Status: "done", Reply: "all done"})
	if out.Blocked || len(*logs) != 1 || !strings.Contains((*logs)[0], "exit status 2") {
		t.Fatalf("%+v %q", out, *logs)
	}
}

// A hook that hangs, and one whose child keeps its output open, are killed
// at their bound; the event goes on.
func TestRunHangingHookIsBounded(t *testing.T) {
	s, logs, dir := set(t, `{"pre_tool": [{"command": "sleep 1000", "timeout": 1}, {"command": "(sleep 1000 &) ; sleep 1000"}, {"command": "touch ran"}]}`, time.Second)
	start := time.Now()
	out := s.Run(context.Background(), Input{Event: PreTool, Tool: "x"})
	if took := time.Since(start); out.Blocked || took > 30*time.Second {
		t.Fatalf("%+v after %s", out, took)
	}
	if len(*logs) != 2 || !strings.Contains((*logs)[0], "timed out after 1s") {
		t.Fatalf("logs %q", *logs)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Fatal("the next hook did not run")
	}
}

func TestRunOutputIsBounded(t *testing.T) {
	s, _, _ := set(t, `{"pre_tool": [{"command": "head -c 5000000 /dev/zero | tr '\\0' x >&2; exit 2"}]}`, 0)
	out := s.Run(context.Background(), Input{Event: PreTool, Tool: "x"})
	if !out.Blocked || len(out.Reason) > MaxOutput+100 || !strings.Contains(out.Reason, "more bytes dropped") {
		t.Fatalf("reason of %d bytes", len(out.Reason))
	}
}

func TestRunCancelled(t *testing.T) {
	s, logs, _ := set(t, `{"stop": [{"command": "sleep 1000"}]}`, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	s.Run(ctx, Input{Event: Stop})
	if len(*logs) != 0 {
		t.Fatalf("a cancelled run's hook is not a failure: %q", *logs)
	}
}
