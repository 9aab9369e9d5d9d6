package server

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/langserver"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/shellrule"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/postgres"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Backend is what the server adapts, as gopls adapts its cache and session:
// the settings, the workspace, the store and the agent runtime of one
// connection, composed by NewBackend. The LSP handlers are a thin layer over it.
//
// A backend is immutable: Reconfigure derives a new one from a clone of
// the settings. What a connection keeps across settings changes is its
// *connection, shared by every backend derived from the first; everything
// else is computed from the settings by with, never copied field by field
// (TestReconfigureLosesNothing fails when a field is forgotten).
type Backend struct {
	*connection
	Settings  config.Settings     // immutable: derive changed settings from Settings.Clone()
	Runtime   *agent.Runtime      // the runtime of the settings: a stateless executor of the runs the hub's registry begins (Backend.Live)
	Rules     shellrule.Set       // the allow and deny rules of the settings, parsed
	AllowEdit []workspace.Rule    // protected files the settings let the agent change without confirmation
	Sandbox   *sandbox.Sandbox    // confines commands (Landlock)
	Confine   sandbox.Settings    // how each project's commands are confined
	Model     *model.OpenAI       // the endpoint
	MCP       *session.MCPSource  // the MCP servers of the projects
	Hooks     *session.HookSource // the hooks of the projects' runs
	// Lang runs the language servers agent-lsp starts itself for clients
	// that give no language features (headless, ACP); kept by a backend
	// whose settings start them alike (sameLang).
	Lang *langserver.Manager
}

// connection is what a backend keeps across settings changes: set once by
// NewBackend, then only read, by every backend derived from it.
type connection struct {
	Workspace *workspace.Workspace
	Store     store.Store
	// NotStored: the store could not be opened (a database that cannot be
	// reached, a file another process holds), and the sessions of this
	// backend are kept in memory only.
	NotStored bool

	hub        *Hub
	environ    []string            // the connection's environment, commands start from it scrubbed
	getenv     func(string) string // reads the connection's environment
	warn       func(string)        // tells the user (window/logMessage)
	ask        asker               // asks the user a question (window/showMessageRequest)
	closeStore func()              // closes the store if this backend opened it (not the daemon's)
}

// Folder is one workspace folder as the editor names it.
type Folder struct {
	Path string
	Name string
}

// NewBackend composes a backend: the projects of folders, the store the
// settings name, the model and the runtime, whose commands run in environ
// scrubbed of the API key and the settings' scrubEnv patterns. The notices
// are problems the user should hear of (a folder that could not be added, a
// store that could not be opened); they do not stop the backend.
func NewBackend(hub *Hub, s config.Settings, enc workspace.Encoding, folders []Folder, environ []string, getenv func(string) string, warn func(string), ask asker) (*Backend, []string, error) {
	var notices []string
	ws := workspace.New(enc)
	for _, f := range folders {
		if _, err := ws.Add(f.Name, f.Path); err != nil {
			notices = append(notices, "workspace folder skipped: "+err.Error())
		}
	}
	db, err := hub.sharedStore(s.StorePath)
	if err != nil {
		return nil, notices, err
	}
	owned := db == nil
	if owned {
		var note string
		db, note = openStore(s.StorePath, s.Durability, warn)
		if note != "" {
			notices = append(notices, note)
		}
	}
	_, memoryOnly := db.(*store.Memory)
	base := &Backend{connection: &connection{Workspace: ws, Store: db, NotStored: memoryOnly, hub: hub, environ: environ, getenv: getenv, warn: warn, ask: ask, closeStore: func() {
		if owned {
			db.Close()
		}
	}}}
	b, err := base.with(s)
	if err != nil {
		base.Close()
		return nil, notices, err
	}
	return b, notices, nil
}

// with composes a backend for settings s over b's workspace and store: the
// rules, the model, the sandbox and a new runtime (sharing the hub's
// registry of running sessions, so a run of the old runtime goes on and
// stays busy). The new backend owns the store's closing.
func (b *Backend) with(s config.Settings) (*Backend, error) {
	s = s.Clone() // the backend's own: a caller's later change of its lists reaches nothing here
	rules, err := shellrule.NewSet(nonEmpty(s.Allow), nonEmpty(s.Deny))
	if err != nil {
		return nil, err
	}
	var allowEdit []workspace.Rule
	for _, p := range nonEmpty(s.AllowEdit) {
		allowEdit = append(allowEdit, workspace.Rule{Pattern: p, Why: "allowed by the allowEdit setting"})
	}
	m := model.NewOpenAI(model.Config{BaseURL: s.BaseURL, Model: s.Model, APIKey: s.APIKey})
	// The store's variable may hold a database URL with its password.
	env := tools.ScrubEnv(b.environ, []string{s.APIKeyEnv, "OPENAI_API_KEY", "AGENT_LSP_STORE"}, s.ScrubEnv)
	sb, err := sandbox.New(s.Landlock)
	if err != nil {
		return nil, err
	}
	mode, _ := sandbox.ParseMode(s.Sandbox) // checked when the settings were resolved
	temp := cmp.Or(b.getenv("TMPDIR"), os.TempDir())
	confine := sandbox.Settings{Mode: mode, Writable: s.SandboxWritable, Network: s.SandboxNetwork, Temp: temp, Getenv: b.getenv}
	warn := b.warn
	ask := b.ask
	if !s.Interactive {
		ask = nil
	}
	sources := session.Sources{Settings: s, Workspace: b.Workspace, Getenv: b.getenv, Env: env, Approvals: b.Store, Ask: ask,
		Log: warn, Sandbox: sb, Confine: confine}
	src := b.MCP
	if src == nil || !src.Same(s) {
		src = session.NewMCPSource(sources, &b.hub.mcp, Version)
	}
	hk := b.Hooks
	if hk == nil || !hk.Same(s) {
		hk = session.NewHookSource(sources)
	}
	lang := b.Lang
	if lang == nil || !sameLang(b.Settings, s) {
		st, err := langserver.ParseSettings(s.LanguageServers) // checked when the settings were resolved
		if err != nil {
			return nil, err
		}
		lang = langserver.New(langserver.Options{Settings: st, Env: env, Sandbox: sb, Confine: confine,
			Wait: time.Duration(s.DiagnosticsWait) * time.Millisecond, Log: func(format string, args ...any) { warn(fmt.Sprintf(format, args...)) }})
	}
	rt, err := agent.New(agent.Config{Hooks: hk, Model: m, ModelName: s.Model, Endpoint: s.BaseURL, ContextTokens: s.ContextTokens, Workspace: b.Workspace, Store: b.Store,
		MaxSteps: s.MaxSteps, Window: s.Window, MaxToolOutput: s.ToolOutput, SubagentsReadOnly: s.ReadOnlySubs, Prices: s.Prices, CommandEnv: env, ToolSource: src,
		SubagentModels: nonEmpty(s.SubagentModel), UserDir: session.UserDir(b.getenv),
		Sandbox: sb, SandboxSettings: confine, Language: lang, Log: func(format string, args ...any) { warn(fmt.Sprintf(format, args...)) },
		Vision: newVision(s.Vision, m).check, ImageMaxBytes: s.ImageMaxBytes, Fetch: tools.FetchConfig{Allow: nonEmpty(s.AllowFetch)},
		MaxBackground: cmp.Or(s.MaxBackground, -1), BackgroundLinger: time.Duration(s.BgLinger) * time.Second,
		MaxHistoryBytes: int64(s.MaxHistoryMB) << 20,
		ScanLimit:       cmp.Or(s.RewindScanLimit, -1)})
	if err != nil {
		if lang != b.Lang {
			lang.Close()
		}
		return nil, err
	}
	return &Backend{connection: b.connection, Model: m, Settings: s, Runtime: rt, Rules: rules, AllowEdit: allowEdit,
		Sandbox: sb, Confine: confine, MCP: src, Hooks: hk, Lang: lang}, nil
}

// sameLang reports whether settings a and b start the same language
// servers in the same way (a backend for b keeps a's).
func sameLang(a, b config.Settings) bool {
	return string(a.LanguageServers) == string(b.LanguageServers) && a.DiagnosticsWait == b.DiagnosticsWait &&
		a.Sandbox == b.Sandbox && a.Landlock == b.Landlock && slices.Equal(a.SandboxWritable, b.SandboxWritable) &&
		slices.Equal(a.ScrubEnv, b.ScrubEnv) && a.APIKeyEnv == b.APIKeyEnv
}

// Reconfigure returns the backend for new settings (didChangeConfiguration):
// the next runs use them; runs in progress keep theirs, but for the MCP
// servers, which restart with their new definitions once the caller
// adopts the new backend (Adopted). Settings that only a restart applies
// (the store file) are kept, and the notices say so.
func (b *Backend) Reconfigure(s config.Settings) (*Backend, []string, error) {
	var notices []string
	if s.StorePath != b.Settings.StorePath {
		notices = append(notices, fmt.Sprintf("the store stays %s until the server restarts", b.StoreName())) // never a URL's password
		s.StorePath = b.Settings.StorePath
	}
	nb, err := b.with(s)
	return nb, notices, err
}

// Adopted tells b that it replaced prev (Reconfigure): prev's MCP servers
// stop if b's definitions differ, and runs in progress on prev use b's.
// Until then prev's servers serve, so a backend that is never adopted (a
// change during shutdown) leaves nothing running that nothing stops.
func (b *Backend) Adopted(prev *Backend) {
	if prev.MCP != nil && prev.MCP != b.MCP {
		prev.MCP.Retire(b.MCP)
	}
	if prev.Lang != nil && prev.Lang != b.Lang {
		go prev.Lang.Close() // the next question starts the new settings' servers; the old ones end meanwhile
	}
}

// nonEmpty drops blank patterns (an empty entry of an editor's list setting).
func nonEmpty(patterns []string) []string {
	var out []string
	for _, p := range patterns {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

// Close stops the MCP servers and closes the store if the backend opened
// it; runs must have ended.
func (b *Backend) Close() {
	if b.Runtime != nil {
		b.Runtime.Close() // background processes lingering after their runs end with the window
	}
	if b.MCP != nil {
		b.MCP.Close()
	}
	if b.Lang != nil {
		b.Lang.Close()
	}
	b.closeStore()
}

// asker asks the user to choose one of actions ("" when dismissed).
type asker = session.Asker

// StoreName says where sessions are kept, for logs (never a password).
func (b *Backend) StoreName() string { return b.Store.Name() }

// openStore opens the store file at path. When another process holds it
// (a server started with --no-daemon while a daemon or another server owns
// the file), the window's sessions are kept in memory; the note says so.
//
// A postgres:// URL names a shared database instead: when it cannot be
// reached, the window's sessions are kept in memory too, and the note says
// that they are not stored (never the URL's password).
func openStore(path string, d store.Durability, warn func(string)) (store.Store, string) {
	if postgres.IsURL(path) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*postgres.ConnectTimeout)
		defer cancel()
		db, err := postgres.Open(ctx, path, postgres.WithDefaultDurability(d), postgres.WithWarn(warn))
		if err == nil {
			return db, ""
		}
		return store.NewMemory(), fmt.Sprintf("%v; sessions of this window are kept in memory only and are NOT stored", err)
	}
	db, err := store.Open(path, store.WithDefaultDurability(d), store.WithWarn(warn))
	if err == nil {
		return db, db.Recovered()
	}
	return store.NewMemory(), fmt.Sprintf("%v; sessions of this window are kept in memory only", err)
}
