package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/mcp"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Choices of the question whether a repository's MCP server may start.
const (
	MCPAllow       = "Allow"
	MCPAlwaysHere  = "Always for this project"
	MCPDeny        = "Deny"
	maxProjectMCP  = 256 << 10 // bytes of a repository's .mcp.json read
	mcpApprovalKey = "mcp"
)

// MCPSource gives a project's runs the tools of the MCP servers it may use:
// the editor's (initializationOptions.mcpServers), those of the files the
// --mcp-config flag names, the user's ($XDG_CONFIG_HOME/agent-lsp/mcp.json)
// and the project's own .mcp.json. A project's servers are repository
// content: each starts only once the user approved its definition (asked
// once, remembered per project folder and definition hash when the answer
// is "Always"), or when allowMCP names that definition (NAME@HASH; a bare
// name approves only the user's own servers); headless runs never ask.
// A project's server runs in the sandbox whatever its "sandbox" says,
// unless mcp.unsandboxed names it.
type MCPSource struct {
	settings  config.Settings
	ws        *workspace.Workspace
	getenv    func(string) string
	env       []string // the clean command environment servers start from
	approvals store.Approvals
	ask       Asker // nil: the client cannot be asked
	log       func(string)
	sandbox   *sandbox.Sandbox // confines stdio servers as the project's commands are, unless a definition opts out
	confine   sandbox.Settings
	pool      *MCPPool // shares managers with the process's other connections
	version   string   // agent-lsp's, as the servers are told it

	mu       sync.Mutex             // guards projects, retired and next
	projects map[string]*mcpProject // by project root
	// retired: the source's servers were stopped (retire); runs that still
	// hold it get next's tools (none when next is nil), so that a source
	// nothing will close again never starts a server.
	retired bool
	next    *MCPSource
}

// mcpProject is the MCP servers of one project.
type mcpProject struct {
	manager *mcp.Manager
	release func()          // gives the manager back to the pool
	servers []MCPServerInfo // every definition, with why it does not run if it does not
	idle    *time.Timer     // stops the servers after the idle time without a call; reset by each call

	mu       sync.Mutex          // guards owner and withheld
	owner    map[string]string   // the server of each model tool name, from the newest listing
	withheld map[string][]string // by server: its tools the newest run left out to fit its budget
}

// listed records which server each of the newest listing's tools is of.
func (mp *mcpProject) listed(list []mcp.ModelTool) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.owner = make(map[string]string, len(list))
	for _, t := range list {
		mp.owner[t.Name] = t.Ref.Server
	}
}

// leftOut records the tools of the project's servers among names, the
// tools a run left out.
func (mp *mcpProject) leftOut(names []string) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	mp.withheld = map[string][]string{}
	for _, n := range names {
		if server, ok := mp.owner[n]; ok {
			mp.withheld[server] = append(mp.withheld[server], n)
		}
	}
}

// withheldOf returns the tools of server the newest run left out.
func (mp *mcpProject) withheldOf(server string) []string {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	return slices.Clone(mp.withheld[server])
}

// used restarts the project's idle countdown: a call begins.
func (mp *mcpProject) used(idle time.Duration) {
	if mp.idle != nil {
		mp.idle.Reset(idle)
	}
}

// MCPServerInfo is a server as agent.mcp lists it.
type MCPServerInfo struct {
	Name      string   `json:"name"`
	Source    string   `json:"source"`    // user, editor, flag or project
	Origin    string   `json:"origin"`    // the file or setting that defines it
	Transport string   `json:"transport"` // stdio or http
	Status    string   `json:"status"`    // running, stopped, starting, failed, waiting for approval, denied
	Reason    string   `json:"reason,omitempty"`
	Tools     int      `json:"tools"` // -1 before its first listing
	Withheld  []string `json:"withheld,omitempty"`
}

// Tools implements agent.ToolSource.
func (m *MCPSource) Tools(ctx context.Context, p *workspace.Project) tools.Set {
	mp, next := m.project(ctx, p)
	if next != nil {
		return next.Tools(ctx, p) // a run that began before the settings changed
	}
	if mp == nil || mp.manager == nil {
		return nil
	}
	list, errs := mp.manager.ModelTools(ctx)
	for name, err := range errs {
		m.log(fmt.Sprintf("MCP server %s of project %s: %v", name, p.Name(), err))
	}
	mp.listed(list)
	set := tools.Set{}
	mgr := mp.manager
	for _, t := range list {
		ref := t.Ref
		set[t.Name] = tools.External(t.Name, ref.Server, t.Description, t.InputSchema, t.ReadOnly,
			func(ctx context.Context, args json.RawMessage, limit int) (tools.Result, error) {
				mp.used(m.idle())
				defer mp.used(m.idle()) // counted from the call's end too: a long call is not idle
				res, err := mgr.Call(ctx, ref.Server, ref.Tool, args)
				if err != nil {
					return tools.Result{Content: fmt.Sprintf("error: the MCP server %s could not run %s: %v", ref.Server, ref.Tool, err),
						IsError: true, Summary: ref.Server + ": " + ref.Tool + " failed"}, nil
				}
				text, isErr := mcp.ResultText(res, limit)
				if isErr {
					text = "error: " + text
				}
				return tools.Result{Content: text, IsError: isErr, Summary: ref.Server + ": " + ref.Tool}, nil
			})
	}
	return set
}

// Withheld implements agent.ToolSource: agent.mcp names, by server, the
// tools the newest run in p left out.
func (m *MCPSource) Withheld(p *workspace.Project, names []string) {
	m.mu.Lock()
	mp, next := m.projects[p.Root()], m.next
	m.mu.Unlock()
	if next != nil {
		next.Withheld(p, names)
		return
	}
	if mp != nil {
		mp.leftOut(names)
	}
}

// project returns the servers of p, reading their definitions and asking
// about the repository's own at the project's first run; after the source
// retired, nil and its successor (nil if none).
func (m *MCPSource) project(ctx context.Context, p *workspace.Project) (*mcpProject, *MCPSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.retired {
		return nil, m.next
	}
	if mp, ok := m.projects[p.Root()]; ok {
		return mp, nil
	}
	defs, infos := m.definitions(p)
	var run []mcp.Definition
	for i, d := range defs {
		ok, why := m.approved(ctx, p, d)
		if !ok {
			infos[i].Status, infos[i].Reason = why, approvalHint(m.settings.AllowMCP, d, why)
			continue
		}
		run = append(run, d)
	}
	mp := &mcpProject{servers: infos}
	if len(run) > 0 {
		timeout := time.Duration(m.settings.MCPTimeout) * time.Second
		create := func() (*mcp.Manager, error) {
			return mcp.NewManager(run, mcp.Options{Env: m.env, Dir: p.Root(), CallTimeout: timeout, ClientVersion: m.version,
				Log:     func(server, line string) { m.log(fmt.Sprintf("mcp %s: %s", server, line)) },
				Prepare: func(d mcp.Definition, cmd *exec.Cmd) error { m.confineServer(p, d, cmd); return nil }})
		}
		mgr, release, err := m.pool.acquire(m.poolKey(p, run, timeout), create)
		if err != nil {
			m.log(fmt.Sprintf("MCP servers of project %s: %v", p.Name(), err))
		} else {
			mp.manager, mp.release = mgr, release
			mp.idle = time.AfterFunc(m.idle(), func() {
				for _, name := range mgr.Servers() {
					mgr.Stop(name) // the next call starts it again
				}
			})
		}
	}
	if m.projects == nil {
		m.projects = map[string]*mcpProject{}
	}
	m.projects[p.Root()] = mp
	return mp, nil
}

// confineServer runs a stdio server in the sandbox under the project's
// policy (as its commands run), unless it may opt out (unconfined).
func (m *MCPSource) confineServer(p *workspace.Project, d mcp.Definition, cmd *exec.Cmd) {
	if m.sandbox == nil || m.unconfined(d) {
		return
	}
	policy := m.confine.Policy(p.Name(), string(p.Info().Type), p.Root())
	if !m.sandbox.Confines(policy) {
		return
	}
	argv := m.sandbox.Argv(policy, append([]string{cmd.Path}, cmd.Args[1:]...)...)
	cmd.Path, cmd.Args = argv[0], argv
}

// sandboxed says whether d's server would run in the sandbox.
func (m *MCPSource) sandboxed(p *workspace.Project, d mcp.Definition) bool {
	if m.sandbox == nil || m.unconfined(d) || d.Transport != mcp.TransportStdio {
		return false
	}
	return m.sandbox.Confines(m.confine.Policy(p.Name(), string(p.Info().Type), p.Root()))
}

// unconfined says whether d's "sandbox": false is honoured: always for a
// definition the user made, for a repository's only when the user's
// mcp.unsandboxed names it (a repository cannot turn the sandbox off).
func (m *MCPSource) unconfined(d mcp.Definition) bool {
	if !d.Unsandboxed {
		return false
	}
	return d.Source != mcp.SourceProject || slices.Contains(m.settings.MCPUnsandboxed, d.Name)
}

// definitions are the project's server definitions, merged (editor over
// flag over user over project), with their listing entries.
func (m *MCPSource) definitions(p *workspace.Project) ([]mcp.Definition, []MCPServerInfo) {
	defs, notes := MCPDefinitions(m.settings, m.ws, m.getenv, p)
	for _, n := range notes {
		m.log(n)
	}
	infos := make([]MCPServerInfo, len(defs))
	for i, d := range defs {
		infos[i] = MCPServerInfo{Name: d.Name, Source: string(d.Source), Origin: d.Origin, Transport: string(d.Transport), Status: "stopped", Tools: -1}
	}
	return defs, infos
}

// MCPDefinitions reads the MCP servers project p may use under settings s:
// the editor's (initializationOptions.mcpServers), the --mcp-config files,
// the user's mcp.json and the project's .mcp.json (read inside the project
// boundary), merged, editor over flag over user over project. getenv
// expands ${VAR} in all but the project's. notes are problems worth telling
// the user (a file that does not parse, an unset variable).
func MCPDefinitions(s config.Settings, ws *workspace.Workspace, getenv func(string) string, p *workspace.Project) (defs []mcp.Definition, notes []string) {
	lookup := func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	}
	var lists [][]mcp.Definition
	add := func(cfg *mcp.Config, err error) {
		if err != nil {
			notes = append(notes, err.Error())
			return
		}
		notes = append(notes, cfg.Warnings...)
		lists = append(lists, cfg.Servers)
	}
	if len(s.MCPServers) > 0 {
		add(mcp.ParseServers(s.MCPServers, "initializationOptions.mcpServers", mcp.SourceEditor, lookup))
	}
	for _, f := range s.MCPConfig {
		if b, err := os.ReadFile(f); err != nil {
			notes = append(notes, fmt.Sprintf("MCP config %s: %v", f, err))
		} else {
			add(mcp.Parse(b, f, mcp.SourceFlag, lookup))
		}
	}
	if user := userMCPFile(getenv); user != "" {
		if b, err := os.ReadFile(user); err == nil {
			add(mcp.Parse(b, user, mcp.SourceUser, lookup))
		}
	}
	if b, err := ws.ReadFile(p, filepath.Join(p.Root(), ".mcp.json"), maxProjectMCP); err == nil {
		add(mcp.Parse(b, filepath.Join(p.Root(), ".mcp.json"), mcp.SourceProject, lookup))
	}
	return mcp.Merge(lists...), notes
}

// userMCPFile is $XDG_CONFIG_HOME/agent-lsp/mcp.json, else under ~/.config.
func userMCPFile(getenv func(string) string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home := getenv("HOME")
		if home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "agent-lsp", "mcp.json")
}

// approved says whether d may start: always for the user's and the
// editor's servers; for the repository's, when allowMCP names this very
// definition (NAME@HASH), when the user approved it before, or when the
// user says so now. Otherwise why is "waiting for approval" or "denied";
// a client that cannot be asked is told the NAME@HASH that would allow it.
func (m *MCPSource) approved(ctx context.Context, p *workspace.Project, d mcp.Definition) (ok bool, why string) {
	if d.Source != mcp.SourceProject {
		return true, ""
	}
	if m.preApproved(ctx, p, d) {
		return true, ""
	}
	key := approvalKey(p, d)
	if m.ask == nil {
		note := ""
		if mcp.NamedOnly(m.settings.AllowMCP, d) {
			note = fmt.Sprintf(" (a bare --allow-mcp %s, or *, approves only your own servers: a repository can redefine any name)", d.Name)
		}
		m.log(fmt.Sprintf("the MCP server %s of the repository %s (%s) was not started: a run that cannot ask starts a repository's server only when --allow-mcp names its definition: --allow-mcp %s%s",
			d.Name, p.Root(), d.Summary(), d.Ref(), note))
		return false, "waiting for approval"
	}
	choice, err := m.ask(ctx, approvalQuestion(p, d, m.sandboxed(p, d)), MCPAllow, MCPAlwaysHere, MCPDeny)
	switch {
	case err != nil:
		return false, "waiting for approval"
	case choice == MCPAllow:
		return true, ""
	case choice == MCPAlwaysHere:
		if err := m.approvals.SetApproval(ctx, key, d.Hash()); err != nil {
			m.log(fmt.Sprintf("remember the approval of %s: %v", d.Name, err))
		}
		return true, ""
	}
	return false, "denied"
}

// approvalQuestion shows what a repository's server would run.
func approvalQuestion(p *workspace.Project, d mcp.Definition, sandboxed bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The repository %s defines the MCP server %s (%s). Start it?\n", p.Root(), d.Name, d.Origin)
	b.WriteString("  " + d.Summary() + "\n")
	if len(d.Env) > 0 {
		names := make([]string, 0, len(d.Env))
		for k := range d.Env {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "  sets: %s\n", strings.Join(names, ", "))
	}
	if d.Transport == mcp.TransportStdio {
		cwd := d.Cwd
		if cwd == "" {
			cwd = p.Root()
		}
		where := "in the sandbox"
		switch {
		case !sandboxed:
			where = "NOT sandboxed: with your rights"
		case d.Unsandboxed:
			where = `in the sandbox: its "sandbox": false is ignored, as a repository cannot turn the sandbox off (your mcp.unsandboxed setting can)`
		}
		fmt.Fprintf(&b, "  in: %s (%s)\n", cwd, where)
	}
	fmt.Fprintf(&b, "  definition: %s (--allow-mcp %s starts it without asking)\n", d.Hash(), d.Ref())
	return strings.TrimRight(b.String(), "\n")
}

// approvalHint says how to let a repository's server start: the NAME@HASH
// of its definition, and why a bare name in allow did not.
func approvalHint(allow []string, d mcp.Definition, why string) string {
	if why == "denied" {
		return "the user denied it in this window"
	}
	hint := fmt.Sprintf("a repository's server starts once its definition is approved: allow it when asked, or with --allow-mcp %s", d.Ref())
	if mcp.NamedOnly(allow, d) {
		hint += fmt.Sprintf(" (a bare --allow-mcp %s, or *, approves only your own servers' definitions, since a repository can redefine any name)", d.Name)
	}
	return hint
}

// describe lists p's servers for agent.mcp: as they run, or, before the
// project's first run, as defined (a repository's server that is not
// approved yet is waiting for approval).
func (m *MCPSource) Describe(ctx context.Context, p *workspace.Project) []MCPServerInfo {
	m.mu.Lock()
	mp := m.projects[p.Root()]
	m.mu.Unlock()
	if mp == nil {
		defs, infos := m.definitions(p)
		for i, d := range defs {
			if d.Source == mcp.SourceProject && !m.preApproved(ctx, p, d) {
				infos[i].Status, infos[i].Reason = "waiting for approval", approvalHint(m.settings.AllowMCP, d, "")
			}
		}
		return infos
	}
	infos := slices.Clone(mp.servers)
	if mp.manager != nil {
		for _, st := range mp.manager.Status() {
			for i := range infos {
				if infos[i].Name == st.Name {
					infos[i].Status, infos[i].Reason, infos[i].Tools = string(st.State), st.Reason, st.Tools
					infos[i].Withheld = mp.withheldOf(st.Name)
				}
			}
		}
	}
	return infos
}

// preApproved says whether a repository's server starts without asking:
// allowMCP names its definition, or the user approved it for the project.
func (m *MCPSource) preApproved(ctx context.Context, p *workspace.Project, d mcp.Definition) bool {
	if mcp.Allowed(m.settings.AllowMCP, d) {
		return true
	}
	v, err := m.approvals.Approval(ctx, approvalKey(p, d))
	return err == nil && v == d.Hash()
}

func approvalKey(p *workspace.Project, d mcp.Definition) string {
	return strings.Join([]string{mcpApprovalKey, p.Root(), d.Name}, "\x00")
}

// same reports whether s defines the same servers as the source's settings.
func (m *MCPSource) Same(s config.Settings) bool {
	o := m.settings
	return string(o.MCPServers) == string(s.MCPServers) && slices.Equal(o.MCPConfig, s.MCPConfig) &&
		slices.Equal(o.AllowMCP, s.AllowMCP) && slices.Equal(o.MCPUnsandboxed, s.MCPUnsandboxed) && o.MCPTimeout == s.MCPTimeout && o.MCPIdle == s.MCPIdle && o.Interactive == s.Interactive
}

// poolKey identifies servers that run identically: the definitions, the
// environment, the folder, the timeout and whether they are confined.
func (m *MCPSource) poolKey(p *workspace.Project, defs []mcp.Definition, timeout time.Duration) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00", p.Root(), p.Name(), timeout)
	for _, d := range defs {
		fmt.Fprintf(h, "%s\x00%s\x00%v\x00", d.Name, d.Hash(), m.sandboxed(p, d))
	}
	for _, kv := range m.env {
		fmt.Fprintf(h, "%s\x00", kv)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// idle is how long a project's servers wait for a call before they stop.
func (m *MCPSource) idle() time.Duration {
	if m.settings.MCPIdle <= 0 {
		return 10 * time.Minute
	}
	return time.Duration(m.settings.MCPIdle) * time.Second
}

// close stops the source's servers for good: its runs have ended.
func (m *MCPSource) Close() { m.Retire(nil) }

// retire stops the source's servers (their settings changed, or the
// connection ends); runs in progress that still hold the source get next's
// tools from their next step on (none when next is nil).
func (m *MCPSource) Retire(next *MCPSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mp := range m.projects {
		if mp.idle != nil {
			mp.idle.Stop()
		}
		if mp.release != nil {
			mp.release()
		}
	}
	m.projects = nil
	m.retired, m.next = true, next
}
