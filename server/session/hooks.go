package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/hooks"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

const (
	maxHooksFile     = 64 << 10 // bytes of a hooks file read
	hooksApprovalKey = "hooks"
	projectHooksFile = ".agents/hooks.json"
)

// HookSource gives a project's runs their hooks: the user's
// ($XDG_CONFIG_HOME/agent-lsp/hooks.json, then the editor's hooks setting),
// which run with the user's rights, and the project's .agents/hooks.json,
// repository content, which runs only once approved and only in the
// sandbox. An approval is bound to the hash of the repository's hooks
// (hooks.Hash), as a repository's MCP servers are approved by NAME@HASH: the
// editor asks (Allow, Always for this project, Deny), allowHooks names the
// hash, or a bare --allow-hooks approves whatever the repository has (the
// run says which hash it ran). Every hook runs with the scrubbed command
// environment. The files are read at each run, so a changed file takes
// effect at the next run and a changed repository hook asks again.
type HookSource struct {
	settings  config.Settings
	ws        *workspace.Workspace
	getenv    func(string) string
	env       []string // the clean command environment
	approvals store.Approvals
	ask       Asker // nil: the client cannot be asked
	log       func(string)
	sandbox   *sandbox.Sandbox
	confine   sandbox.Settings

	mu      sync.Mutex      // guards decided and told; held while asking, so a definition is asked about once
	decided map[string]bool // this window's answers, by approval key and hash
	told    map[string]bool // messages already given, so each is given once
}

// Hooks implements agent.HookSource.
func (h *HookSource) Hooks(ctx context.Context, p *workspace.Project) *hooks.Set {
	set := &hooks.Set{Timeout: time.Duration(h.settings.HookTimeout) * time.Second, Log: h.log}
	mine := hooks.Exec{Dir: p.Root(), Env: h.env}
	if file := h.userFile(); file != "" {
		if b, err := os.ReadFile(file); err == nil {
			set.Add(h.parse(b, file, hooks.SourceUser), mine)
		} else if !errors.Is(err, fs.ErrNotExist) {
			h.tell(fmt.Sprintf("hooks: %v", err))
		}
	}
	if len(h.settings.Hooks) > 0 {
		set.Add(h.parse(h.settings.Hooks, "hooks", hooks.SourceEditor), mine)
	}
	path := filepath.Join(p.Root(), filepath.FromSlash(projectHooksFile))
	b, err := h.ws.ReadFile(p, path, maxHooksFile)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			h.tell(fmt.Sprintf("hooks of the repository %s: %v", p.Root(), err))
		}
		return set
	}
	repo := h.parse(b, projectHooksFile, hooks.SourceProject)
	if len(repo) == 0 {
		return set
	}
	policy := h.confine.Policy(p.Name(), string(p.Info().Type), p.Root())
	if h.sandbox == nil || !h.sandbox.Confines(policy) {
		h.tell(fmt.Sprintf("the hooks of the repository %s (%s) were not run: a repository's hooks run only in the sandbox, and commands are not sandboxed here (the sandbox setting is %s, or the kernel has no Landlock)",
			p.Root(), projectHooksFile, policy.Mode))
		return set
	}
	if h.approved(ctx, p, repo) {
		set.Add(repo, hooks.Exec{Dir: p.Root(), Env: h.env, Wrap: func(argv []string) []string { return h.sandbox.Argv(policy, argv...) }})
	}
	return set
}

// parse reads one hooks file, telling the user (once) of the entries it
// left out.
func (h *HookSource) parse(data []byte, origin string, src hooks.Source) []hooks.Hook {
	cfg := hooks.Parse(data, origin, src)
	for _, e := range cfg.Errors {
		h.tell("hooks: " + e)
	}
	return cfg.Hooks
}

// userFile is $XDG_CONFIG_HOME/agent-lsp/hooks.json, else under ~/.config.
func (h *HookSource) userFile() string {
	if dir := UserDir(h.getenv); dir != "" {
		return filepath.Join(dir, "hooks.json")
	}
	return ""
}

// tell gives the user a message once per source.
func (h *HookSource) tell(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tellLocked(msg)
}

func (h *HookSource) tellLocked(msg string) {
	if h.told[msg] {
		return
	}
	if h.told == nil {
		h.told = map[string]bool{}
	}
	h.told[msg] = true
	h.log(msg)
}

// approved says whether the repository's hooks of p may run: allowHooks
// names their hash (or is a bare --allow-hooks), the user approved this
// definition for the project before or in this window, or says so now.
// A run that cannot ask is told the flag and the hash that would run them.
func (h *HookSource) approved(ctx context.Context, p *workspace.Project, repo []hooks.Hook) bool {
	hash := hooks.Hash(repo)
	key := strings.Join([]string{hooksApprovalKey, p.Root()}, "\x00")
	h.mu.Lock()
	defer h.mu.Unlock()
	if hooks.Approves(h.settings.AllowHooks, hash) {
		if !hooks.Approves(slices.DeleteFunc(slices.Clone(h.settings.AllowHooks), func(a string) bool { return strings.TrimSpace(a) == "*" }), hash) {
			h.tellLocked(fmt.Sprintf("running the hooks of the repository %s (%s), allowed by a bare --allow-hooks; these hooks are --allow-hooks %s:\n%s",
				p.Root(), projectHooksFile, hash, listHooks(repo)))
		}
		return true
	}
	if v, err := h.approvals.Approval(ctx, key); err == nil && v == hash {
		return true
	}
	if ok, seen := h.decided[key+"\x00"+hash]; seen {
		return ok
	}
	if h.ask == nil {
		h.tellLocked(fmt.Sprintf("the hooks of the repository %s (%s) were not run: a run that cannot ask runs a repository's hooks only with --allow-hooks (whatever hooks it has) or --allow-hooks %s (exactly these):\n%s",
			p.Root(), projectHooksFile, hash, listHooks(repo)))
		return false
	}
	choice, err := h.ask(ctx, hooksQuestion(p, repo, hash), MCPAllow, MCPAlwaysHere, MCPDeny)
	if err != nil {
		return false // asked again at the next run
	}
	ok := choice == MCPAllow || choice == MCPAlwaysHere
	if choice == MCPAlwaysHere {
		if err := h.approvals.SetApproval(ctx, key, hash); err != nil {
			h.log(fmt.Sprintf("remember the approval of the hooks of %s: %v", p.Root(), err))
		}
	}
	if h.decided == nil {
		h.decided = map[string]bool{}
	}
	h.decided[key+"\x00"+hash] = ok
	if !ok {
		h.log(fmt.Sprintf("the hooks of the repository %s were not run: denied in this window", p.Root()))
	}
	return ok
}

// hooksQuestion shows what a repository's hooks would run.
func hooksQuestion(p *workspace.Project, repo []hooks.Hook, hash string) string {
	return fmt.Sprintf("The repository %s defines hooks (%s): commands that run on the agent's events, in the sandbox, without asking each time. Run them?\n%s\n  in: %s (in the sandbox)\n  definition: %s (--allow-hooks %s runs exactly these without asking)",
		p.Root(), projectHooksFile, listHooks(repo), p.Root(), hash, hash)
}

// listHooks is one line per hook.
func listHooks(list []hooks.Hook) string {
	lines := make([]string, len(list))
	for i, hk := range list {
		lines[i] = "  " + hk.String()
	}
	return strings.Join(lines, "\n")
}

// same reports whether s defines the hooks as the source's settings do.
func (h *HookSource) Same(s config.Settings) bool {
	o := h.settings
	return string(o.Hooks) == string(s.Hooks) && slices.Equal(o.AllowHooks, s.AllowHooks) && o.HookTimeout == s.HookTimeout &&
		o.Interactive == s.Interactive && o.Sandbox == s.Sandbox && o.Landlock == s.Landlock && slices.Equal(o.SandboxWritable, s.SandboxWritable) &&
		slices.Equal(o.SandboxNetwork, s.SandboxNetwork) && slices.Equal(o.ScrubEnv, s.ScrubEnv)
}
