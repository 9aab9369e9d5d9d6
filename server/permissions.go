package server

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Permission choices offered with window/showMessageRequest.
const (
	AllowOnce   = "Allow once"
	AllowAlways = "Always for this session"
	Deny        = "Deny"
)

// rules are the allow and deny patterns of the settings: * matches any text,
// the rest is literal.
type rules struct{ allow, deny []*regexp.Regexp }

func newRules(allow, deny []string) rules {
	return rules{compile(allow), compile(deny)}
}

func compile(patterns []string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		parts := strings.Split(strings.TrimSpace(p), "*")
		for i := range parts {
			parts[i] = regexp.QuoteMeta(parts[i])
		}
		out = append(out, regexp.MustCompile("^"+strings.Join(parts, ".*")+"$"))
	}
	return out
}

func matchAny(pats []*regexp.Regexp, s string) bool {
	for _, p := range pats {
		if p.MatchString(s) {
			return true
		}
	}
	return false
}

// allowances are the commands the user allowed "always" for a session.
type allowances struct {
	mu   sync.Mutex                 // guards byID
	byID map[string]map[string]bool // session -> command -> allowed
}

func (a *allowances) allowed(session, command string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byID[session][command]
}

func (a *allowances) allow(session, command string) {
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

// permissions is a run's Permissions port: a deny pattern wins, then an allow
// pattern, then an earlier "always" of the session, else the user is asked.
type permissions struct {
	rules  rules
	always *allowances
	c      *client
	before func() // sends the run's queued events before the question
}

// AllowCommand implements tools.Permissions.
func (p *permissions) AllowCommand(ctx context.Context, req tools.CommandRequest) (bool, error) {
	switch {
	case matchAny(p.rules.deny, req.Command):
		return false, nil
	case matchAny(p.rules.allow, req.Command), p.always.allowed(req.Session, req.Command):
		return true, nil
	}
	p.before()
	choice, err := p.c.showMessageRequest(ctx, msgWarning,
		fmt.Sprintf("agent-lsp wants to run `%s` in project %s.", req.Command, req.Project), AllowOnce, AllowAlways, Deny)
	if err != nil {
		return false, err
	}
	switch choice {
	case AllowOnce:
		return true, nil
	case AllowAlways:
		p.always.allow(req.Session, req.Command)
		return true, nil
	}
	return false, nil
}
