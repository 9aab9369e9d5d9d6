package transcript

import (
	"path/filepath"
	"strings"
	"testing"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/event"
)

func TestTarget(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"path":"greet.go"}`, "greet.go"},
		{`{"start_line":3,"path":"a/b.go","end_line":9}`, "a/b.go"},
		{`{"command":"go test ./...","path":""}`, "go test ./..."},
		{`{"path":7,"pattern":"func [A-Z]"}`, "func [A-Z]"}, // a path of another type is skipped
		{`{"project":"web"}`, "web"},
		{`{"task":"one two three four five six seven eight nine ten"}`, FirstWords("one two three four five six seven eight nine ten", 8)},
		{`{"other":"x"}`, ""},
		{`not json`, ""},
		{`[1,2]`, ""},
		{``, ""},
	}
	for _, tt := range tests {
		if got := Target(tt.args); got != tt.want {
			t.Errorf("Target(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
}

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 edits"}, {1, "1 edit"}, {2, "2 edits"}} {
		if got := Count(tt.n, "edit"); got != tt.want {
			t.Errorf("Count(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestDeniedInline: a denied call shows inline with the rule that would
// allow it, not only in the stored transcript.
func TestDeniedInline(t *testing.T) {
	var b strings.Builder
	w := New(&b)
	w.Event(event.Event{Data: event.ToolStart{Name: "run_command", Args: `{"command":"go build"}`}})
	w.Event(event.Event{Data: event.ToolEnd{Name: "run_command", Summary: "not allowed: go build",
		Denied: &event.Denial{What: "go build", RuleHint: `--allow "go build"`}}})
	w.Event(event.Event{Data: event.ToolEnd{Name: "mcp__s__t", Summary: "mcp__s__t not allowed", Denied: &event.Denial{What: "mcp__s__t"}}})
	want := "→ run_command {\"command\":\"go build\"}\n  ✗ not allowed: go build (allow it with --allow \"go build\")\n  ✗ not allowed: mcp__s__t\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestEditPath: an edit's line names the file as the system spells its
// path (the URI's escapes decoded; on Windows with its drive and
// backslashes), not the URI's path.
func TestEditPath(t *testing.T) {
	var b strings.Builder
	w := New(&b)
	w.Event(event.Event{Data: event.Edit{URI: string(uri.File(filepath.Join(t.TempDir(), "my notes.txt"))), Applied: true}})
	w.Event(event.Event{Data: event.Edit{URI: "untitled:Untitled-1"}})
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(got) != 2 || !strings.HasSuffix(got[0], string(filepath.Separator)+"my notes.txt: applied") || strings.Contains(got[0], "%") || strings.Contains(got[0], "file:") {
		t.Errorf("edit line %q", got[0])
	}
	if len(got) == 2 && got[1] != "  edit untitled:Untitled-1: refused" {
		t.Errorf("another URI: %q", got[1])
	}
}
