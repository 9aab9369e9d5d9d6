package session

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/agent-lsp/agent-lsp/agent/shellrule"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Permission choices: the answers a front end offers to a permission
// question (window/showMessageRequest, session/request_permission).
const (
	AllowOnce   = "Allow once"
	AllowAlways = "Always for this session"
	Deny        = "Deny"
)

// Allowances are the command lines the user allowed "always" for a session.
type Allowances struct {
	mu   sync.Mutex                 // guards byID
	byID map[string]map[string]bool // session -> command line -> allowed
}

func (a *Allowances) allowed(session, command string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byID[session][command]
}

func (a *Allowances) allow(session, command string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID = map[string]map[string]bool{}
	}
	if a.byID[session] == nil {
		a.byID[session] = map[string]bool{}
	}
	a.byID[session][command] = true
}

// permissions is a run's Permissions port. The line is parsed into its
// simple commands (shellrule): a deny rule matching any of them wins; then
// the project's own unchanged build and test, a line the allow rules allow
// entirely, or a line allowed "always" in this session runs; else the user is
// asked, with the parsed line shown one command per row.
type permissions struct {
	rules       shellrule.Set
	tools       toolRules // the allow and deny rules that name other programs' tools
	always      *Allowances
	ask         PermissionAsker
	interactive bool   // false: the client cannot answer; deny what the rules do not allow
	before      func() // sends the run's queued events before the question
}

// PermissionQuestion is what the user is asked to allow: the question's
// text, and the command line or tool it is about.
type PermissionQuestion struct {
	Session, Project string
	Text             string
	Command          string // the command line, when it is about one
	Tool             string // the tool of another program, when it is about one
}

// PermissionAsker asks the user a permission question; the answer is one
// of AllowOnce, AllowAlways and Deny, or "" when the question was dismissed.
type PermissionAsker func(ctx context.Context, q PermissionQuestion) (string, error)

// AllowCommand implements tools.Permissions.
func (p *permissions) AllowCommand(ctx context.Context, req tools.CommandRequest) (tools.Permission, error) {
	d := p.rules.Decide(req.Command)
	switch {
	case d.Verdict == shellrule.Deny:
		return tools.Permission{Reason: d.Reason}, nil
	case req.Trusted, !req.AlwaysAsk && (d.Verdict == shellrule.Allow || p.always.allowed(req.Session, req.Command)):
		return tools.Permission{Allowed: true}, nil
	}
	if !p.interactive {
		if req.AlwaysAsk { // no rule allows it
			return tools.Permission{Reason: fmt.Sprintf("%s; this run cannot ask (headless), so it is denied", lower(d.Reason, req.Note))}, nil
		}
		if !d.Ruled { // its form asks whatever the rules say: no --allow would help
			return tools.Permission{Reason: fmt.Sprintf("%s; a line like this always asks and this run cannot ask (headless), so it is denied: no --allow rule allows it", lower(d.Reason, req.Note))}, nil
		}
		hint := fmt.Sprintf("--allow %q", req.Command)
		return tools.Permission{Reason: fmt.Sprintf("%s; this run cannot ask (headless), so it is denied: allow it with %s", lower(d.Reason, req.Note), hint), Hint: hint}, nil
	}
	if req.RulesOnly != "" { // plan and ask runs never ask: the user would approve what the mode promised not to do
		return tools.Permission{Reason: fmt.Sprintf("%s; a %s-mode run runs only what the allow rules allow and never asks, so it is denied: agent mode can run it (asking you first)",
			lower(d.Reason, req.Note), req.RulesOnly)}, nil
	}
	p.before()
	choice, err := p.ask(ctx, PermissionQuestion{Session: req.Session, Project: req.Project, Text: askText(req, d), Command: req.Command})
	if err != nil {
		return tools.Permission{}, err
	}
	return p.answer(choice, req.Session, req.Command), nil
}

// answer is the user's choice as a permission; "Always" remembers key for
// the session.
func (p *permissions) answer(choice, session, key string) tools.Permission {
	switch choice {
	case AllowOnce:
		return tools.Permission{Allowed: true}
	case AllowAlways:
		p.always.allow(session, key)
		return tools.Permission{Allowed: true}
	case "":
		return tools.Permission{Reason: "the user dismissed the question"}
	}
	return tools.Permission{Reason: "the user denied it"}
}

// toolRules are the allow and deny rules that name tools of other programs:
// `mcp__server__tool`, or globs such as `mcp__server__*`.
type toolRules struct{ allow, deny []string }

// newToolRules picks the rules that name MCP tools from the settings' rules.
func newToolRules(allow, deny []string) toolRules {
	pick := func(rules []string) []string {
		var out []string
		for _, r := range rules {
			if r = strings.TrimSpace(r); strings.HasPrefix(r, "mcp__") {
				out = append(out, r)
			}
		}
		return out
	}
	return toolRules{allow: pick(allow), deny: pick(deny)}
}

// match returns the first rule that matches name.
func match(rules []string, name string) (string, bool) {
	for _, r := range rules {
		if ok, _ := path.Match(r, name); ok {
			return r, true
		}
	}
	return "", false
}

// AllowTool implements tools.ToolPermissions: a deny rule naming the tool
// wins, then an allow rule or an "always" answer of this session; else the
// user is asked (the first call of each tool in a session), and a client
// that cannot answer denies it, naming the flag that allows it.
func (p *permissions) AllowTool(ctx context.Context, req tools.ToolRequest) (tools.Permission, error) {
	if r, ok := match(p.tools.deny, req.Tool); ok {
		return tools.Permission{Reason: fmt.Sprintf("denied by the rule %q", r)}, nil
	}
	key := "tool " + req.Tool
	if _, ok := match(p.tools.allow, req.Tool); ok || p.always.allowed(req.Session, key) {
		return tools.Permission{Allowed: true}, nil
	}
	if !p.interactive {
		return tools.Permission{Reason: fmt.Sprintf("no allow rule names %s; this run cannot ask (headless), so it is denied: allow it with --allow %s (or --allow 'mcp__%s__*')", req.Tool, req.Tool, req.Server),
			Hint: "--allow " + req.Tool}, nil
	}
	p.before()
	args := req.Args
	if len(args) > 300 {
		args = args[:300] + "…"
	}
	question := fmt.Sprintf("agent-lsp wants to call %s, a tool of the MCP server %s, in project %s, with:\n  %s", req.Tool, req.Server, req.Project, args)
	choice, err := p.ask(ctx, PermissionQuestion{Session: req.Session, Project: req.Project, Text: question, Tool: req.Tool})
	if err != nil {
		return tools.Permission{}, err
	}
	return p.answer(choice, req.Session, key), nil
}

// lower is why a line needs asking, for a sentence.
func lower(reason, note string) string {
	switch {
	case note != "":
		return strings.TrimSuffix(note, ".")
	case reason != "":
		return reason
	}
	return "no allow rule matches it"
}

// askText is the question: the project, each simple command on its own row,
// and why the line was not allowed by a rule.
func askText(req tools.CommandRequest, d shellrule.Decision) string {
	var b strings.Builder
	verb := "run"
	if req.Background {
		verb = "start in the background (until it is stopped or the run ends)"
	}
	fmt.Fprintf(&b, "agent-lsp wants to %s in project %s:\n", verb, req.Project)
	if len(d.Commands) == 0 {
		fmt.Fprintf(&b, "  %s\n", req.Command)
	}
	for _, c := range d.Commands {
		fmt.Fprintf(&b, "  %s\n", c.Text)
	}
	if d.Reason != "" {
		fmt.Fprintf(&b, "(%s)\n", d.Reason)
	}
	if req.Note != "" {
		b.WriteString(req.Note + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
