package session

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
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/store/postgres"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Options are what a backend is made of, as its front end gives them: the
// resolved settings and the connection's environment and voices. A value
// no one changes once a backend holds it: a change of settings is made on
// Clone() and builds a new backend (Reconfigure), so every option carries
// over without being named (TestReconfigureLosesNothing).
type Options struct {
	Settings config.Settings
	// Environ is the connection's environment; commands start from it
	// scrubbed of the API key and the settings' scrubEnv patterns.
	Environ []string
	Getenv  func(string) string // reads the connection's environment
	Warn    func(string)        // tells the user (window/logMessage, ACP's log)
	// Ask asks the user a question (window/showMessageRequest, ACP's
	// permission request); nil, or settings that are not interactive: never.
	Ask     Asker
	Version string // agent-lsp's, as MCP servers are told it
}

// Clone is a copy of o that shares nothing a change could reach through:
// the settings' lists and the environment are copied.
func (o Options) Clone() Options {
	o.Settings = o.Settings.Clone()
	o.Environ = slices.Clone(o.Environ)
	return o
}

// Backend is what a front end adapts, as gopls adapts its cache and
// session: the options, the workspace, the store and the agent runtime of
// one connection, composed by NewBackend. The LSP handlers (package
// server) and the ACP adapter (server/acp) are thin layers over it.
//
// A backend is immutable: Reconfigure builds a new one from a clone of
// its Options with the new settings. What a connection keeps across
// settings changes is its *connection, shared by every backend derived
// from the first; the rest is computed from the options by build
// (TestReconfigureLosesNothing fails when a field is forgotten).
type Backend struct {
	*connection
	Options                    // immutable: derive changed options from Options.Clone()
	Runtime   *agent.Runtime   // the runtime of the settings: a stateless executor of the runs the hub's registry begins (Backend.Live)
	Rules     shellrule.Set    // the allow and deny rules of the settings, parsed
	AllowEdit []workspace.Rule // protected files the settings let the agent change without confirmation
	Sandbox   *sandbox.Sandbox // confines commands (Landlock)
	Confine   sandbox.Settings // how each project's commands are confined
	Model     *model.OpenAI    // the endpoint
	MCP       *MCPSource       // the MCP servers of the projects
	Hooks     *HookSource      // the hooks of the projects' runs
	Env       []string         // the clean command environment: Environ scrubbed
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
	closeStore func() // closes the store if this backend opened it (not the daemon's)
}

// Folder is one workspace folder as the editor names it.
type Folder struct {
	Path string
	Name string
}

// NewBackend composes a backend: the projects of folders, the store the
// settings name, the model and the runtime. The notices are problems the
// user should hear of (a folder that could not be added, a store that
// could not be opened); they do not stop the backend.
func NewBackend(hub *Hub, o Options, enc workspace.Encoding, folders []Folder) (*Backend, []string, error) {
	o = o.Clone() // the backend's own: a caller's later change of its lists reaches nothing here
	var notices []string
	ws := workspace.New(enc)
	for _, f := range folders {
		if _, err := ws.Add(f.Name, f.Path); err != nil {
			notices = append(notices, "workspace folder skipped: "+err.Error())
		}
	}
	db, err := hub.sharedStore(o.Settings.StorePath)
	if err != nil {
		return nil, notices, err
	}
	owned := db == nil
	if owned {
		var note string
		db, note = openStore(o.Settings.StorePath, o.Settings.Durability, o.Warn)
		if note != "" {
			notices = append(notices, note)
		}
	}
	_, memoryOnly := db.(*store.Memory)
	c := &connection{Workspace: ws, Store: db, NotStored: memoryOnly, hub: hub, closeStore: func() {
		if owned {
			db.Close()
		}
	}}
	b, err := build(c, o, nil)
	if err != nil {
		c.closeStore()
		return nil, notices, err
	}
	return b, notices, nil
}

// build composes the backend of options o over connection c: the rules,
// the model, the sandbox and a new runtime (sharing the hub's registry of
// running sessions, so a run of prev's runtime goes on and stays busy).
// It keeps prev's MCP servers, hooks and language servers when o defines
// them alike. o is the backend's own: the caller cloned it.
func build(c *connection, o Options, prev *Backend) (*Backend, error) {
	s := o.Settings
	rules, err := shellrule.NewSet(nonEmpty(s.Allow), nonEmpty(s.Deny))
	if err != nil {
		return nil, err
	}
	var allowEdit []workspace.Rule
	for _, p := range nonEmpty(s.AllowEdit) {
		allowEdit = append(allowEdit, workspace.Rule{Pattern: p, Why: "allowed by the allowEdit setting"})
	}
	b := &Backend{connection: c, Options: o, Rules: rules, AllowEdit: allowEdit,
		Model: model.NewOpenAI(model.Config{BaseURL: s.BaseURL, Model: s.Model, APIKey: s.APIKey}),
		// The store's variable may hold a database URL with its password.
		Env: tools.ScrubEnv(o.Environ, []string{s.APIKeyEnv, "OPENAI_API_KEY", "AGENT_LSP_STORE"}, s.ScrubEnv)}
	if b.Sandbox, err = sandbox.New(s.Landlock); err != nil {
		return nil, err
	}
	mode, _ := sandbox.ParseMode(s.Sandbox) // checked when the settings were resolved
	temp := cmp.Or(o.Getenv("TMPDIR"), os.TempDir())
	b.Confine = sandbox.Settings{Mode: mode, Writable: s.SandboxWritable, Network: s.SandboxNetwork, Temp: temp, Getenv: o.Getenv}
	ask := o.Ask
	if !s.Interactive {
		ask = nil
	}
	sources := Sources{Settings: s, Workspace: c.Workspace, Getenv: o.Getenv, Env: b.Env, Approvals: c.Store, Ask: ask,
		Log: o.Warn, Sandbox: b.Sandbox, Confine: b.Confine}
	b.MCP, b.Hooks, b.Lang = prevSources(prev, s)
	if b.MCP == nil {
		b.MCP = NewMCPSource(sources, &c.hub.mcp, o.Version)
	}
	if b.Hooks == nil {
		b.Hooks = NewHookSource(sources)
	}
	if b.Lang == nil {
		if b.Lang, err = b.newLang(); err != nil {
			return nil, err
		}
	}
	if b.Runtime, err = b.newRuntime(); err != nil {
		if prev == nil || b.Lang != prev.Lang {
			b.Lang.Close()
		}
		return nil, err
	}
	return b, nil
}

// prevSources are the parts of prev that settings s define alike: its MCP
// servers, hooks and language servers (nil for each that s changes).
func prevSources(prev *Backend, s config.Settings) (*MCPSource, *HookSource, *langserver.Manager) {
	if prev == nil {
		return nil, nil, nil
	}
	var src *MCPSource
	var hk *HookSource
	var lang *langserver.Manager
	if prev.MCP != nil && prev.MCP.Same(s) {
		src = prev.MCP
	}
	if prev.Hooks != nil && prev.Hooks.Same(s) {
		hk = prev.Hooks
	}
	if prev.Lang != nil && sameLang(prev.Settings, s) {
		lang = prev.Lang
	}
	return src, hk, lang
}

// newLang is the language servers of b's settings.
func (b *Backend) newLang() (*langserver.Manager, error) {
	s := b.Settings
	st, err := langserver.ParseSettings(s.LanguageServers) // checked when the settings were resolved
	if err != nil {
		return nil, err
	}
	return langserver.New(langserver.Options{Settings: st, Env: b.Env, Sandbox: b.Sandbox, Confine: b.Confine,
		Wait: time.Duration(s.DiagnosticsWait) * time.Millisecond, Log: b.logf}), nil
}

// newRuntime is the runtime of b's settings and parts.
func (b *Backend) newRuntime() (*agent.Runtime, error) {
	s := b.Settings
	return agent.New(agent.Config{Hooks: b.Hooks, Model: b.Model, ModelName: s.Model, Endpoint: s.BaseURL, ContextTokens: s.ContextTokens,
		Workspace: b.Workspace, Store: b.Store, MaxSteps: s.MaxSteps, Window: s.Window, MaxToolOutput: s.ToolOutput,
		SubagentsReadOnly: s.ReadOnlySubs, Prices: s.Prices, CommandEnv: b.Env, ToolSource: b.MCP,
		SubagentModels: nonEmpty(s.SubagentModel), UserDir: UserDir(b.Getenv),
		Sandbox: b.Sandbox, SandboxSettings: b.Confine, Language: b.Lang, Log: b.logf,
		Vision: newVision(s.Vision, b.Model).check, ImageMaxBytes: s.ImageMaxBytes, Fetch: tools.FetchConfig{Allow: nonEmpty(s.AllowFetch)},
		MaxBackground: cmp.Or(s.MaxBackground, -1), BackgroundLinger: time.Duration(s.BgLinger) * time.Second,
		MaxHistoryBytes: int64(s.MaxHistoryMB) << 20, ScanLimit: cmp.Or(s.RewindScanLimit, -1)})
}

// logf tells the user a formatted line (Warn).
func (b *Backend) logf(format string, args ...any) { b.Warn(fmt.Sprintf(format, args...)) }

// sameLang reports whether settings a and b start the same language
// servers in the same way (a backend for b keeps a's).
func sameLang(a, b config.Settings) bool {
	return string(a.LanguageServers) == string(b.LanguageServers) && a.DiagnosticsWait == b.DiagnosticsWait &&
		a.Sandbox == b.Sandbox && a.Landlock == b.Landlock && slices.Equal(a.SandboxWritable, b.SandboxWritable) &&
		slices.Equal(a.ScrubEnv, b.ScrubEnv) && a.APIKeyEnv == b.APIKeyEnv
}

// Reconfigure returns the backend for new settings (didChangeConfiguration,
// ACP's MCP servers of a session): b's options, cloned, with settings s.
// The next runs use them; runs in progress keep theirs, but for the MCP
// servers, which restart with their new definitions once the caller
// adopts the new backend (Adopted). Settings that only a restart applies
// (the store file) are kept, and the notices say so.
func (b *Backend) Reconfigure(s config.Settings) (*Backend, []string, error) {
	var notices []string
	o := b.Options.Clone()
	o.Settings = s.Clone() // a caller's later change of its lists reaches nothing here
	if s.StorePath != b.Settings.StorePath {
		notices = append(notices, fmt.Sprintf("the store stays %s until the server restarts", b.StoreName())) // never a URL's password
		o.Settings.StorePath = b.Settings.StorePath
	}
	nb, err := build(b.connection, o, b)
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

// StoreName says where sessions are kept, for logs (never a password).
func (b *Backend) StoreName() string { return b.Store.Name() }

// Live is the registry of the process's live sessions (the hub's, which
// every connection's backend shares): what runs now, and how to cancel it.
func (b *Backend) Live() *agent.Registry { return b.hub.live }

// Core is what a run takes of b.
func (b *Backend) Core() Core {
	return Core{Settings: b.Settings, Rules: b.Rules, Runtime: b.Runtime, Store: b.Store, Live: b.hub.live}
}

// Run runs spec with the backend's settings, rules, runtime and store
// (Core.Run: the one place a run's agent request is built).
func (b *Backend) Run(ctx context.Context, spec RunSpec, p Ports) (agent.Result, error) {
	return b.Core().Run(ctx, spec, p)
}

// Status is a session's status as the user should see it: a session
// stored as running that runs nowhere now was cut off by a crash or a
// kill, and resumes.
func (b *Backend) Status(sess store.Session) store.Status {
	if sess.Status == store.StatusRunning && !b.Live().Running(sess.ID) {
		return store.StatusInterrupted
	}
	return sess.Status
}

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
