//go:build unix

package session

import (
	"context"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/shellrule"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Rules name other programs' tools by name or glob; deny wins; what no rule
// allows is denied by a client that cannot ask, naming the flag.
func TestAllowTool(t *testing.T) {
	p := &permissions{always: &Allowances{}, before: func() {},
		tools: newToolRules([]string{"git status", "mcp__fs__*", "mcp__db__query"}, []string{"mcp__fs__write*"})}
	for _, c := range []struct {
		tool, want string
		allowed    bool
	}{
		{"mcp__fs__read_file", "", true},
		{"mcp__db__query", "", true},
		{"mcp__fs__write_file", `denied by the rule "mcp__fs__write*"`, false},
		{"mcp__db__drop", "allow it with --allow mcp__db__drop (or --allow 'mcp__db__*')", false},
	} {
		perm, err := p.AllowTool(context.Background(), tools.ToolRequest{Session: "s", Project: "p", Tool: c.tool, Server: strings.Split(c.tool, "__")[1]})
		if err != nil || perm.Allowed != c.allowed || !strings.Contains(perm.Reason, c.want) {
			t.Errorf("%s: %+v %v", c.tool, perm, err)
		}
	}
	p.always.allow("s", "tool mcp__db__drop") // "Always for this session"
	if perm, _ := p.AllowTool(context.Background(), tools.ToolRequest{Session: "s", Tool: "mcp__db__drop"}); !perm.Allowed {
		t.Error("an always answer does not hold")
	}
	if perm, _ := p.AllowTool(context.Background(), tools.ToolRequest{Session: "other", Tool: "mcp__db__drop"}); perm.Allowed {
		t.Error("an always answer leaked to another session")
	}
}

// A headless run's refusal names the --allow that would let the line run,
// and only when one would: a line that asks for its form (a redirection to
// a file, a wrapper) asks whatever the rules say, even one naming it.
func TestHeadlessCommandHint(t *testing.T) {
	for _, c := range []struct {
		line, want, hint string
	}{
		{"make lint", `allow it with --allow "make lint"`, `--allow "make lint"`},
		{"echo x > out.txt", "a line like this always asks and this run cannot ask (headless), so it is denied: no --allow rule allows it", ""},
		{"sh -c 'make lint'", "no --allow rule allows it", ""},
	} {
		for _, allow := range [][]string{nil, {c.line}} {
			rules, err := shellrule.NewSet(allow, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := &permissions{rules: rules, always: &Allowances{}, before: func() {}}
			perm, err := p.AllowCommand(context.Background(), tools.CommandRequest{Session: "s", Project: "p", Command: c.line})
			if err != nil {
				t.Fatal(err)
			}
			if allow != nil && c.hint != "" {
				if !perm.Allowed {
					t.Errorf("%q with --allow naming it: %+v", c.line, perm)
				}
				continue
			}
			if perm.Allowed || !strings.Contains(perm.Reason, c.want) || perm.Hint != c.hint {
				t.Errorf("%q (allow %q): %+v, want the reason to say %q and the hint %q", c.line, allow, perm, c.want, c.hint)
			}
		}
	}
}
