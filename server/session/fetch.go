package session

import (
	"context"
	"fmt"

	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// AllowFetch implements tools.FetchPermissions for a host the allowed
// fetch hosts (permissions.fetch) do not name: allowed when the user
// answered "always" for it in this session, else the user is asked with
// the full URL (what it carries leaves the machine); a client that cannot
// answer denies it, naming the flag that allows it. A redirect is never
// asked about.
func (p *permissions) AllowFetch(ctx context.Context, req tools.FetchRequest) (tools.Permission, error) {
	key := "fetch " + req.Host
	if p.always.allowed(req.Session, key) {
		return tools.Permission{Allowed: true}, nil
	}
	if req.Redirect {
		return tools.Permission{Reason: "not allowed"}, nil
	}
	if !p.interactive {
		return tools.Permission{Reason: fmt.Sprintf("no allowed fetch host names %s; this run cannot ask (headless), so it is denied: allow it with --allow-fetch %s", req.Host, req.Host)}, nil
	}
	p.before()
	question := fmt.Sprintf("agent-lsp wants to fetch, in project %s:\n  %s\n(what the URL carries leaves this machine; \"%s\" allows the host %s for this session)",
		req.Project, req.URL, AllowAlways, req.Host)
	choice, err := p.ask(ctx, PermissionQuestion{Session: req.Session, Project: req.Project, Text: question, Tool: "fetch_url"})
	if err != nil {
		return tools.Permission{}, err
	}
	return p.answer(choice, req.Session, key), nil
}
