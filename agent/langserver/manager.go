package langserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Defaults of Options.
const (
	DefaultWait = 1500 * time.Millisecond
	DefaultIdle = 10 * time.Minute
	// DefaultAskTimeout bounds one request (definition, references, …).
	DefaultAskTimeout = 10 * time.Second
	// quiet is how long a server that does not say which version its
	// diagnostics are for must stay silent about a file after publishing
	// for it, for them to count as settled (it may publish in stages).
	quiet = 300 * time.Millisecond
)

// Options configure a Manager. Zero values take the defaults.
type Options struct {
	Settings Settings // the user's languageServers setting
	// Env is the environment servers run with (scrubbed of credentials,
	// as commands are); their program is found in its PATH.
	Env []string
	// Sandbox and Confine confine servers as the project's build and test
	// are, with the network off; a nil Sandbox runs them unconfined.
	Sandbox *sandbox.Sandbox
	Confine sandbox.Settings
	// Wait bounds the wait for an edited file's diagnostics; default
	// DefaultWait. StartWait bounds a server's start and its first
	// diagnostics; default ten times Wait.
	Wait, StartWait time.Duration
	// Idle is how long a server may go unused before it is stopped;
	// default DefaultIdle.
	Idle time.Duration
	// AskTimeout bounds one request; default DefaultAskTimeout.
	AskTimeout time.Duration
	// Log receives what an operator should know (a server that died).
	Log func(format string, args ...any)
}

// Manager runs the language servers of a workspace's projects, one per
// project root, and answers the tools' language questions through them.
// It is safe for concurrent use.
type Manager struct {
	opts Options

	mu      sync.Mutex         // guards servers and closed
	servers map[string]*server // by project root
	closed  bool
	stop    chan struct{} // closed by Close: ends the idle reaper
}

// New returns a manager; it starts nothing until a question needs a server.
func New(o Options) *Manager {
	if o.Wait <= 0 {
		o.Wait = DefaultWait
	}
	if o.StartWait <= 0 {
		o.StartWait = 10 * o.Wait
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.AskTimeout <= 0 {
		o.AskTimeout = DefaultAskTimeout
	}
	if o.Log == nil {
		o.Log = func(string, ...any) {}
	}
	m := &Manager{opts: o, servers: map[string]*server{}, stop: make(chan struct{})}
	go m.reap()
	return m
}

func (m *Manager) log(format string, args ...any) { m.opts.Log(format, args...) }

// closeWait bounds how long Close waits for the servers to end.
const closeWait = 5 * time.Second

// Close stops every server and the idle reaper, and waits (a few seconds
// at most) for the servers to end, so that none outlives agent-lsp.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.stop)
	servers := m.servers
	m.servers = map[string]*server{}
	m.mu.Unlock()
	var ended []<-chan struct{}
	for _, s := range servers {
		s.mu.Lock()
		ended = append(ended, s.stopLocked("agent-lsp is closing"))
		s.mu.Unlock()
	}
	timeout := time.After(closeWait)
	for _, ch := range ended {
		select {
		case <-ch:
		case <-timeout:
			return
		}
	}
}

// reap stops servers that went unused for Idle.
func (m *Manager) reap() {
	t := time.NewTicker(max(min(m.opts.Idle/4, 30*time.Second), 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.mu.Lock()
		servers := make([]*server, 0, len(m.servers))
		for _, s := range m.servers {
			servers = append(servers, s)
		}
		m.mu.Unlock()
		for _, s := range servers {
			s.mu.Lock()
			if s.state == ready && s.busy == 0 && time.Since(s.used) > m.opts.Idle {
				m.log("language server %s of %s stopped after %s unused", s.spec.Name, s.root, m.opts.Idle)
				s.stopLocked("stopped when idle")
			}
			s.mu.Unlock()
		}
	}
}

// server returns the server of p (made, not started, on first use), or why
// there is none.
func (m *Manager) server(p *workspace.Project) (*server, error) {
	root := filepath.Clean(p.Root())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("the language servers are closed")
	}
	if s, ok := m.servers[root]; ok {
		return s, nil
	}
	typ := string(p.Info().Type)
	spec, path, err := choose(m.opts.Settings, typ, root, func(name string) string { return LookPath(name, m.opts.Env) })
	if err != nil {
		return nil, err
	}
	s := &server{m: m, root: root, name: p.Name(), typ: typ, spec: spec, path: path}
	m.servers[root] = s
	return s, nil
}

// argv is the command line that runs a server's argv: in the sandbox of its
// project's build and test, with the network off, as run_command runs them.
func (m *Manager) argv(s *server, argv []string) []string {
	policy := m.opts.Confine.Policy(s.name, s.typ, s.root)
	policy.Network = false
	if m.opts.Sandbox == nil || !m.opts.Sandbox.Confines(policy) {
		return argv
	}
	if cache := userCache(m.opts.Env); cache != "" {
		for _, c := range s.spec.Caches {
			policy.Writable = append(policy.Writable, filepath.Join(cache, c))
		}
	}
	for _, c := range append(slices.Clone(policy.Caches), policy.Writable...) {
		os.MkdirAll(c, 0o755) // a cache that does not exist yet must exist to be writable
	}
	return m.opts.Sandbox.Argv(policy, argv...)
}

// userCache is the user's cache folder in env.
func userCache(env []string) string {
	get := func(name string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], name+"="); ok {
				return v
			}
		}
		return ""
	}
	if c := get("XDG_CACHE_HOME"); filepath.IsAbs(c) {
		return c
	}
	if h := get("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".cache")
	}
	return ""
}

// Offers implements tools.LangOffer: nil when a server is known for p's
// type and found, else why none answers (it starts nothing).
func (m *Manager) Offers(p *workspace.Project) error {
	_, _, err := choose(m.opts.Settings, string(p.Info().Type), filepath.Clean(p.Root()), func(name string) string { return LookPath(name, m.opts.Env) })
	return err
}

// serves checks that s serves the files of q.
func (s *server) serves(files []string) error {
	if len(s.spec.Extensions) == 0 {
		return nil
	}
	for _, f := range files {
		if ext := strings.ToLower(filepath.Ext(f)); !slices.Contains(s.spec.Extensions, ext) {
			return noServer("%s serves %s files here, not %s", s.spec.Name, strings.Join(s.spec.Extensions, " "), filepath.Base(f))
		}
	}
	return nil
}

func noServer(format string, args ...any) error {
	return &tools.NoServerError{Reason: fmt.Sprintf(format, args...)}
}

// prepare finds, starts and syncs the server for q: every file of q is
// sent its text. deadline is when a settling wait must end. The server is
// held (not stopped as idle) until release is called.
func (m *Manager) prepare(ctx context.Context, q tools.LangQuery) (s *server, marks []mark, first bool, deadline time.Time, release func(), err error) {
	begin := time.Now()
	release = func() {}
	s, err = m.server(q.Project)
	if err != nil {
		return nil, nil, false, begin, release, err
	}
	if err := s.serves(q.Files); err != nil {
		return nil, nil, false, begin, release, err
	}
	release = s.hold()
	first, err = s.ensure(ctx, q, begin.Add(m.opts.StartWait))
	if err != nil {
		return s, nil, first, begin, release, err
	}
	deadline = begin.Add(m.opts.Wait)
	if first {
		deadline = begin.Add(m.opts.StartWait)
	}
	for _, f := range q.Files {
		text, err := q.Read(ctx, f)
		if err != nil {
			return s, nil, first, deadline, release, fmt.Errorf("read %s: %w", q.Project.Rel(f), err)
		}
		mk, err := s.syncFile(ctx, f, text)
		if err != nil {
			return s, nil, first, deadline, release, err
		}
		marks = append(marks, mk)
	}
	return s, marks, first, deadline, release, nil
}

// Diagnostics implements tools.Language.
func (m *Manager) Diagnostics(ctx context.Context, q tools.LangQuery) (tools.LangReport, error) {
	s, marks, first, deadline, release, err := m.prepare(ctx, q)
	defer release()
	if err != nil {
		return tools.LangReport{}, err
	}
	settled := true
	switch {
	case q.Settle && s.spec.Pull == "tsserver":
		settled = s.pullTS(ctx, marks, deadline)
	case q.Settle && s.pulls():
		settled = s.pullDiagnostics(ctx, marks, deadline)
	case q.Settle:
		settled = s.settle(ctx, marks, deadline)
	case first:
		s.quietProject(ctx, deadline) // its first diagnostics of the workspace
	}
	rep := s.report(settled)
	rep.Wait = m.opts.Wait
	if first {
		rep.Wait = m.opts.StartWait
	}
	return rep, nil
}

// Ask implements tools.Language.
func (m *Manager) Ask(ctx context.Context, q tools.LangQuery, r tools.LangRequest) (json.RawMessage, error) {
	if !slices.Contains(tools.LangMethods, r.Method) {
		return nil, fmt.Errorf("%s is not a request the language tools send", r.Method)
	}
	if r.Path != "" {
		q.Files = []string{r.Path}
	}
	s, _, _, _, release, err := m.prepare(ctx, q)
	defer release()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	conn, enc, caps := s.conn, s.enc, s.caps
	var text string
	if d := s.docs[r.Path]; d != nil {
		text = d.text
	}
	s.mu.Unlock()
	if conn == nil {
		return nil, fmt.Errorf("%s is not running", s.spec.Name)
	}
	if c := capability[r.Method]; c != "" && !caps[c] {
		return nil, fmt.Errorf("%s does not answer %s", s.spec.Name, r.Method)
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.AskTimeout)
	defer cancel()
	var raw json.RawMessage
	if _, err := conn.Call(ctx, r.Method, tools.LangParams(r, string(uri.File(r.Path)), text, enc), &raw); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s did not answer %s within %s", s.spec.Name, r.Method, m.opts.AskTimeout)
		}
		return nil, fmt.Errorf("%s: %w", s.spec.Name, err)
	}
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	return raw, nil
}

// capability is the server capability each request needs.
var capability = map[string]string{
	tools.MethodDefinition: "definitionProvider", tools.MethodReferences: "referencesProvider",
	tools.MethodImplementation: "implementationProvider", tools.MethodHover: "hoverProvider",
	tools.MethodDocumentSymbol: "documentSymbolProvider", tools.MethodWorkspaceSym: "workspaceSymbolProvider",
}

// Encoding implements tools.Language: the position encoding the project's
// server chose (UTF-16 until it runs).
func (m *Manager) Encoding(p *workspace.Project) workspace.Encoding {
	m.mu.Lock()
	s := m.servers[filepath.Clean(p.Root())]
	m.mu.Unlock()
	if s == nil {
		return workspace.UTF16
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.enc == "" {
		return workspace.UTF16
	}
	return s.enc
}

// Status is one project's language server as the editors' health checks
// list it.
type Status struct {
	Root    string `json:"root"`
	Name    string `json:"name"`
	Command string `json:"command"`
	State   string `json:"state"` // not started, starting, ready, stopped, failed; none when no server is known or found
	Error   string `json:"error,omitempty"`
}

// Statuses lists the servers the manager made, by root.
func (m *Manager) Statuses() []Status {
	m.mu.Lock()
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		s.mu.Lock()
		st := Status{Root: s.root, Name: s.spec.Name, Command: s.command(), State: [...]string{"stopped", "starting", "ready", "failed"}[s.state]}
		if s.err != nil && s.state != ready {
			st.Error = s.err.Error()
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Root < out[j].Root })
	return out
}

// About says which server answers for p and how it is: its status once
// made, else the server it would start ("not started"), else why there is
// none (State "none", Error the reason). It starts nothing.
func (m *Manager) About(p *workspace.Project) Status {
	root := filepath.Clean(p.Root())
	for _, st := range m.Statuses() {
		if st.Root == root {
			return st
		}
	}
	spec, _, err := choose(m.opts.Settings, string(p.Info().Type), root, func(name string) string { return LookPath(name, m.opts.Env) })
	if err != nil {
		return Status{Root: root, State: "none", Error: err.Error()}
	}
	return Status{Root: root, Name: spec.Name, Command: strings.Join(append([]string{spec.Command}, spec.Args...), " "), State: "not started"}
}

// Settings returns the setting the manager was made with.
func (m *Manager) Settings() Settings { return m.opts.Settings }
