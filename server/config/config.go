// Package config is agent-lsp's one source of configuration: the table of
// settings (each with its environment variable, its initializationOptions
// path, its flag, its default and its documentation), the resolver that
// combines them (defaults < environment < initializationOptions < flags), and
// the flag registration shared by `agent-lsp` (serve) and `agent-lsp run`.
// The settings tables of docs/configuration.md and docs/protocol.md are
// generated from it and checked against it by a test.
package config

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/hooks"
	"github.com/agent-lsp/agent-lsp/agent/images"
	"github.com/agent-lsp/agent-lsp/agent/langserver"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// Settings is the resolved configuration of one server: one editor connection
// or one headless run.
type Settings struct {
	BaseURL    string
	Model      string
	APIKeyEnv  string // the name of the variable holding the API key
	APIKey     string // its value; never logged, stored or sent to a child process
	StorePath  string
	Durability store.Durability
	Edits      string // "apply" or "review"
	Allow      []string
	Deny       []string
	AllowEdit  []string // protected files edited without confirmation (globs over project paths)
	ScrubEnv   []string // variables commands never get (patterns)
	// Sandbox is how commands are confined: workspace-write, read-only or off.
	Sandbox         string
	SandboxNetwork  []string // projects whose commands may use the network; "*" all
	SandboxWritable []string // more directories commands may write
	Landlock        bool     // false behaves as on a kernel without Landlock
	// Interactive is false for a client that cannot answer questions (a
	// headless run): what the rules do not allow is denied at once.
	Interactive bool
	MaxSteps    int
	// Mode is a run's mode when neither its request nor its session names
	// one: agent, plan or ask.
	Mode string
	// MaxTokens and MaxCost bound what one run spends (agent.Limits); 0:
	// no bound.
	MaxTokens int
	MaxCost   float64
	// ContextTokens is the model's context size; 0: the runtime's default
	// for the model (agent.ContextTokensFor).
	ContextTokens int
	Window        int
	ToolOutput    int                    // bytes a tool output is cut to
	ReadOnlySubs  bool                   // subagents get only the tools that read
	SubagentModel []string               // models a repository's subagent or command may choose (names or globs)
	Prices        map[string]model.Price // USD per million tokens, by model
	MCPServers    json.RawMessage        // the editor's MCP servers, in the .mcp.json shape
	MCPConfig     []string               // files of MCP servers (--mcp-config)
	AllowMCP      []string               // MCP servers that start without asking: NAME@HASH, or a bare name for the user's own
	MCPTimeout    int                    // seconds per MCP tool call
	MCPIdle       int                    // seconds without a call before a project's servers stop
	Vision        string                 // whether the model takes images: auto, true or false
	ImageMaxBytes int                    // bytes one stored image may have
	AllowFetch    []string               // hosts fetch_url fetches without asking; "*" every public host
	// LanguageServers is the languageServers setting: per project type, the
	// language server agent-lsp starts when no editor gives the agent
	// language features (langserver.ParseSettings checks it).
	LanguageServers json.RawMessage
	DiagnosticsWait int // milliseconds an edit waits for its file's diagnostics

	// MCPUnsandboxed names repository MCP servers whose "sandbox": false is
	// honoured; any other repository server runs sandboxed.
	MCPUnsandboxed []string

	Hooks       json.RawMessage // the editor's hooks, in the hooks.json shape
	AllowHooks  []string        // repository hooks that run without asking: their hash, or * for any (a bare --allow-hooks)
	HookTimeout int             // seconds a hook may run when its entry gives no timeout

	MaxBackground int // background processes a session may have running at once; 0: none
	BgLinger      int // seconds a done run's background processes may outlive it; 0: none

	MaxHistoryMB    int // megabytes of rewind history a session keeps (docs/rewind.md); 0: no cap
	RewindScanLimit int // files a project may have for a command's changes to be looked for (docs/rewind.md); 0: never
}

// Setting is one row of the configuration table.
type Setting struct {
	Name    string // as the documentation names it
	Env     string // environment variable; "" when there is none
	Init    string // dotted path in initializationOptions, e.g. "model.baseURL"
	Flag    string // flag of serve and run, without dashes; "" when there is none
	Default string // the default, as documented
	Doc     string // one line for --help and the tables
	// Bare is what the flag given without a value means ("": it needs
	// one); Takes says whether the next argument is its value
	// (JoinFlagValues).
	Bare  string
	Takes func(arg string) bool
	kind  kind
}

// kind binds a setting to its field and says how to parse it.
type kind struct {
	typ       string // "string", "integer", "list": for the docs
	parse     func(s *Settings, v string) error
	parseJSON func(s *Settings, raw json.RawMessage) error
}

func stringKind(field func(*Settings) *string, check func(string) error) kind {
	set := func(s *Settings, v string) error {
		if check != nil {
			if err := check(v); err != nil {
				return err
			}
		}
		*field(s) = v
		return nil
	}
	return kind{"string", set, func(s *Settings, raw json.RawMessage) error {
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be a string")
		}
		return set(s, v)
	}}
}

func boolKind(field func(*Settings) *bool) kind {
	return kind{"boolean", func(s *Settings, v string) error {
		switch strings.ToLower(v) {
		case "true", "on", "1", "yes":
			*field(s) = true
		case "false", "off", "0", "no":
			*field(s) = false
		default:
			return fmt.Errorf("must be true or false, not %q", v)
		}
		return nil
	}, func(s *Settings, raw json.RawMessage) error {
		if err := json.Unmarshal(raw, field(s)); err != nil {
			return fmt.Errorf("must be true or false")
		}
		return nil
	}}
}

func intKind(field func(*Settings) *int, lo, hi int) kind {
	set := func(s *Settings, v int) error {
		if v < lo || v > hi {
			return fmt.Errorf("must be between %d and %d, not %d", lo, hi, v)
		}
		*field(s) = v
		return nil
	}
	return kind{"integer", func(s *Settings, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("must be an integer, not %q", v)
		}
		return set(s, n)
	}, func(s *Settings, raw json.RawMessage) error {
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("must be an integer")
		}
		return set(s, n)
	}}
}

// objectKind is a JSON object: in initializationOptions as is, on a
// command line or in the environment as JSON text.
func objectKind(field func(*Settings) *json.RawMessage) kind {
	set := func(s *Settings, raw json.RawMessage) error {
		var probe map[string]json.RawMessage
		if err := json.Unmarshal(raw, &probe); err != nil {
			return fmt.Errorf("must be a JSON object")
		}
		*field(s) = append(json.RawMessage(nil), raw...)
		return nil
	}
	return kind{"object", func(s *Settings, v string) error { return set(s, json.RawMessage(v)) }, set}
}

// checkedObject is an object kind whose value check also approves.
func checkedObject(field func(*Settings) *json.RawMessage, check func(json.RawMessage) error) kind {
	k := objectKind(field)
	parseJSON := k.parseJSON
	k.parseJSON = func(s *Settings, raw json.RawMessage) error {
		if err := check(raw); err != nil {
			return err
		}
		return parseJSON(s, raw)
	}
	k.parse = func(s *Settings, v string) error { return k.parseJSON(s, json.RawMessage(v)) }
	return k
}

// priceKind reads a price table: "model=in/out,..." (in USD per million
// tokens), or in JSON an object {model: {input, output}}.
func priceKind() kind {
	parse := func(s *Settings, v string) error {
		prices := map[string]model.Price{}
		for _, entry := range strings.Split(v, ",") {
			if strings.TrimSpace(entry) == "" {
				continue
			}
			name, pair, ok := strings.Cut(entry, "=")
			in, out, ok2 := strings.Cut(pair, "/")
			var p model.Price
			_, err1 := fmt.Sscan(strings.TrimSpace(in), &p.Input)
			_, err2 := fmt.Sscan(strings.TrimSpace(out), &p.Output)
			if !ok || !ok2 || err1 != nil || err2 != nil || strings.TrimSpace(name) == "" || p.Input < 0 || p.Output < 0 {
				return fmt.Errorf("must be model=input/output in USD per million tokens, e.g. gpt-4o=2.5/10, not %q", entry)
			}
			prices[strings.TrimSpace(name)] = p
		}
		s.Prices = prices
		return nil
	}
	return kind{"table", parse, func(s *Settings, raw json.RawMessage) error {
		var v string
		if json.Unmarshal(raw, &v) == nil {
			return parse(s, v)
		}
		var m map[string]model.Price
		if err := json.Unmarshal(raw, &m); err != nil {
			return fmt.Errorf("must be an object {model: {input, output}} in USD per million tokens")
		}
		for name, p := range m {
			if p.Input < 0 || p.Output < 0 {
				return fmt.Errorf("%s: prices must not be negative", name)
			}
		}
		s.Prices = m
		return nil
	}}
}

// listKind appends: a flag given twice, or a list, adds every pattern.
func listKind(field func(*Settings) *[]string) kind {
	return kind{"list", func(s *Settings, v string) error {
		*field(s) = append(*field(s), v)
		return nil
	}, func(s *Settings, raw json.RawMessage) error {
		var v []string
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("must be a list of strings")
		}
		*field(s) = v
		return nil
	}}
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if !slices.Contains(values, v) {
			return fmt.Errorf("must be %s, not %q", strings.Join(values, " or "), v)
		}
		return nil
	}
}

// Table is every setting, in the order the documentation lists them.
var Table = []Setting{
	{Name: "endpoint", Env: "OPENAI_BASE_URL", Init: "model.baseURL", Flag: "base-url", Default: "https://api.openai.com/v1",
		Doc:  "OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 for Ollama",
		kind: stringKind(func(s *Settings) *string { return &s.BaseURL }, nil)},
	{Name: "model", Env: "AGENT_LSP_MODEL", Init: "model.model", Flag: "model", Default: "gpt-4o-mini",
		Doc:  "model name",
		kind: stringKind(func(s *Settings) *string { return &s.Model }, nil)},
	{Name: "vision", Env: "AGENT_LSP_VISION", Init: "model.vision", Flag: "vision", Default: "auto",
		Doc:  "whether the model takes images (prompt images, read_image): true, false, or auto: the well-known models that do (gpt-4o, gpt-4.1, gpt-5, claude, gemini, llava...), else what the endpoint's model list says (docs/images-and-fetch.md)",
		kind: stringKind(func(s *Settings) *string { return &s.Vision }, oneOf("auto", "true", "false"))},
	{Name: "image size", Init: "images.maxBytes", Default: strconv.Itoa(images.DefaultMaxBytes),
		Doc:  "bytes one image may have (65536..20971520); larger ones, and those over 2048 pixels, are scaled down and re-encoded",
		kind: intKind(func(s *Settings) *int { return &s.ImageMaxBytes }, 64<<10, 20<<20)},
	{Name: "API key variable", Init: "model.apiKeyEnv", Default: "OPENAI_API_KEY",
		Doc:  "the name of the environment variable that holds the API key (the key itself is never a setting)",
		kind: stringKind(func(s *Settings) *string { return &s.APIKeyEnv }, nil)},
	{Name: "store file", Env: "AGENT_LSP_STORE", Init: "store.path", Flag: "store", Default: "$XDG_STATE_HOME/agent-lsp/sessions.db",
		Doc:  "session store file (else ~/.local/state/agent-lsp/sessions.db), or a postgres:// URL of a database machines share (docs/postgres.md)",
		kind: stringKind(func(s *Settings) *string { return &s.StorePath }, nil)},
	{Name: "durability", Env: "AGENT_LSP_DURABILITY", Init: "durability", Flag: "durability", Default: string(store.DefaultDurability),
		Doc: "when checkpoints reach the disk: sync (every step), batched (groups) or exit (at the run's end); also per agent.run",
		kind: stringKind(func(s *Settings) *string { return (*string)(&s.Durability) }, func(v string) error {
			_, err := store.ParseDurability(v)
			return err
		})},
	{Name: "edit mode", Init: "edits", Default: "apply",
		Doc:  "apply: edits reach the editor as they are made; review: each needs the user's confirmation; also per agent.run",
		kind: stringKind(func(s *Settings) *string { return &s.Edits }, oneOf("apply", "review"))},
	{Name: "allowed commands", Init: "permissions.allow", Flag: "allow", Default: "none",
		Doc:  "command rules that run without asking, matched per command of the parsed line: words, * matches any words, never ; && | (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.Allow })},
	{Name: "denied commands", Init: "permissions.deny", Flag: "deny", Default: "none",
		Doc:  "command rules that never run: a match on any command of a line denies it, also the project's build and test (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.Deny })},
	{Name: "allowed protected edits", Init: "permissions.allowEdit", Flag: "allow-edit", Default: "none",
		Doc:  "protected files (docs/security.md) the agent may change without confirmation, as globs over project paths, e.g. .vscode/settings.json (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.AllowEdit })},
	{Name: "allowed fetch hosts", Init: "permissions.fetch", Flag: "allow-fetch", Default: "none",
		Doc:  "hosts fetch_url fetches without asking, matched literally (a name or an IP literal), * for every host; private, loopback and link-local addresses only for a host named exactly; otherwise the editor asks per host, and headless runs are denied (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.AllowFetch })},
	{Name: "scrubbed environment", Init: "scrubEnv", Default: "credentials and sockets",
		Doc:  "patterns of environment variables commands never get; replaces the default list (docs/security.md); the API key's variable is always removed",
		kind: listKind(func(s *Settings) *[]string { return &s.ScrubEnv })},
	{Name: "sandbox", Env: "AGENT_LSP_SANDBOX", Init: "sandbox.mode", Flag: "sandbox", Default: string(sandbox.WorkspaceWrite),
		Doc: "how commands are confined (docs/security.md): workspace-write (write in the project, temp and build caches; no network), read-only (write in temp only) or off",
		kind: stringKind(func(s *Settings) *string { return &s.Sandbox }, func(v string) error {
			_, err := sandbox.ParseMode(v)
			return err
		})},
	{Name: "sandbox network", Env: "AGENT_LSP_SANDBOX_NETWORK", Init: "sandbox.network", Flag: "sandbox-network", Default: "none",
		Doc:  "projects whose commands may use the network (TCP bind and connect), * for all (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.SandboxNetwork })},
	{Name: "sandbox writable", Init: "sandbox.writable", Flag: "sandbox-write", Default: "none",
		Doc:  "more directories sandboxed commands may write, besides the project, temp and the project type's build caches (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.SandboxWritable })},
	{Name: "Landlock", Env: "AGENT_LSP_LANDLOCK", Init: "sandbox.landlock", Flag: "landlock", Default: "true",
		Doc:  "false makes agent-lsp behave as on a kernel without Landlock: commands run unconfined and all of them ask",
		kind: boolKind(func(s *Settings) *bool { return &s.Landlock })},
	{Name: "interactive", Init: "interactive", Default: "true",
		Doc:  "false for a client that cannot answer questions (agent-lsp run sends it): what the rules do not allow is denied at once, naming the flag that allows it",
		kind: boolKind(func(s *Settings) *bool { return &s.Interactive })},
	{Name: "step limit", Init: "maxSteps", Flag: "max-steps", Default: strconv.Itoa(agent.DefaultMaxSteps),
		Doc:  "most steps of one run (a model turn and a tool round are one step each)",
		kind: intKind(func(s *Settings) *int { return &s.MaxSteps }, 1, 100000)},
	{Name: "mode", Init: "mode", Flag: "mode", Default: string(agent.ModeAgent),
		Doc: "what a run may do: agent (read, edit, run commands as the rules allow), plan (only the tools that read; answers with a plan) or ask (only the tools that read; answers questions); also per agent.run and per session (docs/modes.md)",
		kind: stringKind(func(s *Settings) *string { return &s.Mode }, func(v string) error {
			_, err := agent.ParseMode(v)
			return err
		})},
	{Name: "token limit", Init: "limits.maxTokens", Flag: "max-tokens", Default: "none",
		Doc:  "most prompt plus completion tokens one run may spend, its summaries and subagents included; the run stops before the model call that would cross it (status limit, resumable with a fresh budget); also per agent.run (docs/modes.md)",
		kind: autoIntKind(func(s *Settings) *int { return &s.MaxTokens }, 1, 1_000_000_000, "none")},
	{Name: "cost limit", Init: "limits.maxCost", Flag: "max-cost", Default: "none",
		Doc:  "most USD one run may spend at the prices setting's price of its model (which it then needs); stops as the token limit does; also per agent.run (docs/modes.md)",
		kind: costKind(func(s *Settings) *float64 { return &s.MaxCost })},
	{Name: "context tokens", Env: "AGENT_LSP_CONTEXT_TOKENS", Init: "model.contextTokens", Flag: "context-tokens", Default: "auto",
		Doc:  "the model's context size in tokens (1024..10000000); every request fits it with room for the answer. auto: the known size of well-known models, else 8192 (set it to your local server's context: Ollama's num_ctx, llama.cpp's -c)",
		kind: autoIntKind(func(s *Settings) *int { return &s.ContextTokens }, 1024, 10_000_000)},
	{Name: "context window", Env: "AGENT_LSP_WINDOW", Init: "window", Flag: "window", Default: strconv.Itoa(agent.DefaultWindow),
		Doc:  "most recent messages the model sees besides the run's prompts (10..1000); the token budget usually binds first",
		kind: intKind(func(s *Settings) *int { return &s.Window }, 10, 1000)},
	{Name: "tool output", Env: "AGENT_LSP_TOOL_OUTPUT", Init: "toolOutput", Flag: "tool-output", Default: strconv.Itoa(tools.DefaultMaxOutput),
		Doc:  "bytes of one tool output the model sees (1024..1048576), head and tail kept; a small context cuts more",
		kind: intKind(func(s *Settings) *int { return &s.ToolOutput }, 1024, 1<<20)},
	{Name: "read-only subagents", Init: "subagents.readOnly", Flag: "read-only-subagents", Default: "false",
		Doc:  "give subagents only the tools that read (read_file, list_files, search, read_image); the model can also ask for it per call",
		kind: boolKind(func(s *Settings) *bool { return &s.ReadOnlySubs })},
	{Name: "subagent models", Init: "subagents.models", Flag: "subagent-model", Default: "none",
		Doc:  "models a repository's subagent or slash command file may choose, by name or glob (gpt-4o*), * for any (repeatable); another model such a file names is not used, the run's is, with a note. Your own files choose any model",
		kind: listKind(func(s *Settings) *[]string { return &s.SubagentModel })},
	{Name: "MCP servers", Init: "mcpServers", Default: "none",
		Doc:  "Model Context Protocol servers, as in .mcp.json: {NAME: {command, args, env, cwd} | {type: http, url, headers}}; ${VAR} takes the editor's environment",
		kind: objectKind(func(s *Settings) *json.RawMessage { return &s.MCPServers })},
	{Name: "MCP config files", Init: "mcp.configFiles", Flag: "mcp-config", Default: "none",
		Doc:  "files in the .mcp.json shape whose servers runs may use (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.MCPConfig })},
	{Name: "allowed MCP servers", Init: "mcp.allow", Flag: "allow-mcp", Default: "none",
		Doc:  "servers of a repository's .mcp.json that start without asking, as NAME@HASH (agent-lsp mcp hash prints it): that definition only; a bare NAME or * approves only your own servers (repeatable); headless runs start no repository server without it",
		kind: listKind(func(s *Settings) *[]string { return &s.AllowMCP })},
	{Name: "unsandboxed MCP servers", Init: "mcp.unsandboxed", Flag: "mcp-unsandboxed", Default: "none",
		Doc:  "repository MCP servers, by name, whose \"sandbox\": false is honoured; any other repository server runs in the sandbox whatever its .mcp.json says (repeatable)",
		kind: listKind(func(s *Settings) *[]string { return &s.MCPUnsandboxed })},
	{Name: "MCP idle", Init: "mcpIdle", Flag: "mcp-idle", Default: "600",
		Doc:  "seconds without a call after which a project's MCP servers stop (1..86400); the next call starts them again",
		kind: intKind(func(s *Settings) *int { return &s.MCPIdle }, 1, 86400)},
	{Name: "hooks", Init: "hooks", Default: "none",
		Doc:  "commands run on the agent's events, in the hooks.json shape ({EVENT: [{matcher, command, timeout}]} for pre_tool, post_tool, prompt and stop); yours: they run with your rights (docs/customization.md)",
		kind: objectKind(func(s *Settings) *json.RawMessage { return &s.Hooks })},
	{Name: "allowed repository hooks", Init: "allowHooks", Flag: "allow-hooks", Default: "none", Bare: "*", Takes: isHookRef,
		Doc:  "a repository's .agents/hooks.json runs without asking when this names its hash (the run that did not run them prints it); a bare --allow-hooks runs whatever hooks the repository has (repeatable); headless runs run no repository hook without it",
		kind: listKind(func(s *Settings) *[]string { return &s.AllowHooks })},
	{Name: "hook timeout", Init: "hookTimeout", Flag: "hook-timeout", Default: "30",
		Doc:  "seconds a hook may run when its entry gives no timeout (1..600); then it is killed, reported, and the run goes on",
		kind: intKind(func(s *Settings) *int { return &s.HookTimeout }, 1, 600)},
	{Name: "background processes", Init: "backgroundProcesses", Flag: "background-processes", Default: strconv.Itoa(tools.DefaultMaxBackground),
		Doc:  "background processes (run_command with background: true) a session may have running at once (0..16; 0: none); they end when the run ends",
		kind: intKind(func(s *Settings) *int { return &s.MaxBackground }, 0, 16)},
	{Name: "background linger", Init: "backgroundLinger", Flag: "background-linger", Default: "0",
		Doc:  "seconds the background processes of a run that is done may outlive it (0..3600; 0: they end with the run); the session's next run takes them over, and they still end with the window, the server and a cancelled run",
		kind: intKind(func(s *Settings) *int { return &s.BgLinger }, 0, 3600)},
	{Name: "rewind history", Init: "rewind.maxHistoryMB", Flag: "max-history-mb", Default: "256",
		Doc:  "megabytes of rewind history (checkpoints and the files' earlier contents, compressed) one session keeps (0..1000000; 0: no cap); over it, the oldest checkpoints' contents go first as each run starts, and a rewind that needs them says so before anything changes (docs/rewind.md)",
		kind: intKind(func(s *Settings) *int { return &s.MaxHistoryMB }, 0, 1_000_000)},
	{Name: "rewind scan limit", Init: "rewind.scanLimit", Default: strconv.Itoa(agent.DefaultScanLimit),
		Doc:  "files (tracked and untracked, not ignored) a project may have for the files a command changes to be looked for, so that a rewind can restore them (0..1000000; 0: never); above it the scan is skipped and the checkpoint says so (docs/rewind.md)",
		kind: intKind(func(s *Settings) *int { return &s.RewindScanLimit }, 0, 1000000)},
	{Name: "MCP timeout", Env: "AGENT_LSP_MCP_TIMEOUT", Init: "mcpTimeout", Flag: "mcp-timeout", Default: "60",
		Doc:  "seconds one MCP tool call may take (1..3600); it is cancelled with its run too",
		kind: intKind(func(s *Settings) *int { return &s.MCPTimeout }, 1, 3600)},
	{Name: "language servers", Env: "AGENT_LSP_LANGUAGE_SERVERS", Init: "languageServers", Flag: "language-servers", Default: "built-in, found on PATH",
		Doc: "the language servers agent-lsp starts when the editor gives no language features (headless, ACP), per project type: {go: {command, args, initializationOptions}, rust: null (off), ...}; built in: gopls, typescript-language-server, basedpyright or pyright, rust-analyzer, clangd (docs/language.md)",
		kind: checkedObject(func(s *Settings) *json.RawMessage { return &s.LanguageServers }, func(raw json.RawMessage) error {
			_, err := langserver.ParseSettings(raw)
			return err
		})},
	{Name: "diagnostics wait", Env: "AGENT_LSP_DIAGNOSTICS_WAIT", Init: "diagnosticsWait", Flag: "diagnostics-wait", Default: "1500",
		Doc:  "milliseconds an edit's result waits for the language server's diagnostics of the edited file (100..60000); ten times that for a server still starting",
		kind: intKind(func(s *Settings) *int { return &s.DiagnosticsWait }, 100, 60000)},
	{Name: "prices", Env: "AGENT_LSP_PRICES", Init: "model.prices", Flag: "prices", Default: "none",
		Doc:  "USD per million input/output tokens by model, e.g. gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6 (an object {model: {input, output}} in initializationOptions): usage events and results then carry a cost",
		kind: priceKind()},
}

// autoIntKind is an integer within lo..hi, or the word (default "auto")
// that means 0.
func autoIntKind(field func(*Settings) *int, lo, hi int, word ...string) kind {
	k := intKind(field, lo, hi)
	parse, parseJSON := k.parse, k.parseJSON
	auto := "auto"
	if len(word) > 0 {
		auto = word[0]
	}
	k.parse = func(s *Settings, v string) error {
		if v == auto {
			*field(s) = 0
			return nil
		}
		return parse(s, v)
	}
	k.parseJSON = func(s *Settings, raw json.RawMessage) error {
		if string(raw) == `"`+auto+`"` || string(raw) == "0" {
			*field(s) = 0
			return nil
		}
		return parseJSON(s, raw)
	}
	return k
}

// costKind is an amount of USD above 0, or "none" (0).
func costKind(field func(*Settings) *float64) kind {
	set := func(s *Settings, v float64) error {
		if v < 0 || v > 1e6 {
			return fmt.Errorf("must be an amount of USD between 0 and 1000000, not %g", v)
		}
		*field(s) = v
		return nil
	}
	return kind{"number", func(s *Settings, v string) error {
		if v == "none" {
			*field(s) = 0
			return nil
		}
		f, err := strconv.ParseFloat(strings.TrimPrefix(v, "$"), 64)
		if err != nil {
			return fmt.Errorf("must be an amount of USD, e.g. 0.50, not %q", v)
		}
		return set(s, f)
	}, func(s *Settings, raw json.RawMessage) error {
		if string(raw) == `"none"` {
			*field(s) = 0
			return nil
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return fmt.Errorf("must be a number of USD")
		}
		return set(s, f)
	}}
}

// Defaults returns the settings before the environment, initializationOptions
// and flags are applied. The store path depends on the environment (XDG).
func Defaults(getenv func(string) string) Settings {
	s := Settings{ScrubEnv: slices.Clone(tools.DefaultScrubEnv)}
	for _, st := range Table {
		if st.kind.typ != "list" && st.kind.typ != "table" && st.kind.typ != "object" && !strings.HasPrefix(st.Default, "$") { // their default is empty
			if err := st.kind.parse(&s, st.Default); err != nil {
				panic(fmt.Sprintf("config: default of %s: %v", st.Name, err))
			}
		}
	}
	s.StorePath = DefaultStorePath(getenv)
	return s
}

// DefaultStorePath is $XDG_STATE_HOME/agent-lsp/sessions.db, else (on
// Windows) under %LOCALAPPDATA%, else under ~/.local/state (the account's
// home when HOME is unset); it is always an absolute path.
func DefaultStorePath(getenv func(string) string) string {
	dir := getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		dir = platformStateDir(getenv)
	}
	if !filepath.IsAbs(dir) { // unset, or relative: the XDG spec says to ignore it
		home := getenv("HOME")
		if home == "" {
			// Started with a bare environment (some ACP clients do): the
			// account's home from the user database.
			if u, err := user.Current(); err == nil {
				home = u.HomeDir
			}
		}
		if !filepath.IsAbs(home) {
			// Never a path relative to wherever the process started.
			return filepath.Join(privateTempDir(), "sessions.db")
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "agent-lsp", "sessions.db")
}

// privateTempDir is a folder of the temporary directory only this user can
// use: agent-lsp-<uid>, created with mode 0700, when it is this user's own
// folder of that mode (another user could have made it first, to hand
// this process a store of their choosing); else a new folder of its own.
func privateTempDir() string {
	tmp := os.TempDir()
	if !filepath.IsAbs(tmp) {
		tmp = "/tmp"
	}
	dir := filepath.Join(tmp, fmt.Sprintf("agent-lsp-%d", os.Getuid()))
	os.Mkdir(dir, 0o700)
	if privateDir(dir) {
		return dir
	}
	if d, err := os.MkdirTemp(tmp, "agent-lsp-"); err == nil {
		return d
	}
	return dir
}

// StorePath is the store file used when neither initializationOptions nor a
// flag names one: AGENT_LSP_STORE, else the default.
func StorePath(getenv func(string) string) string {
	if p := getenv("AGENT_LSP_STORE"); p != "" {
		return p
	}
	return DefaultStorePath(getenv)
}

// Flags holds the settings given on a command line, in the order given.
type Flags struct {
	set []flagValue
}

type flagValue struct {
	setting *Setting
	value   string
}

// Register adds every setting that has a flag to fs; what the command line
// sets is recorded in the returned Flags, which Resolve applies last.
func Register(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	for i := range Table {
		st := &Table[i]
		if st.Flag == "" {
			continue
		}
		usage := st.Doc
		if st.Env != "" {
			usage += " (overrides " + st.Env + ")"
		}
		if st.Default != "none" {
			usage += " (default " + st.Default + ")"
		}
		set := func(v string) error {
			var probe Settings
			if err := st.kind.parse(&probe, v); err != nil {
				return err
			}
			f.set = append(f.set, flagValue{st, v})
			return nil
		}
		if st.Bare == "" {
			fs.Func(st.Flag, usage, set)
			continue
		}
		fs.BoolFunc(st.Flag, usage, func(v string) error {
			if v == "true" {
				v = st.Bare
			}
			return set(v)
		})
	}
	return f
}

// JoinFlagValues returns args with "--flag VALUE" written "--flag=VALUE"
// for the flags that may be given bare (--allow-hooks) when VALUE is one of
// theirs (a hash), so that it is not read as the prompt.
func JoinFlagValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		k := slices.IndexFunc(Table, func(st Setting) bool { return st.Takes != nil && st.Flag == name })
		if strings.HasPrefix(a, "-") && k >= 0 && i+1 < len(args) && Table[k].Takes(args[i+1]) {
			out = append(out, a+"="+args[i+1])
			i++
			continue
		}
		out = append(out, a)
	}
	return out
}

// isHookRef says whether arg names repository hooks: a hash of
// hooks.Hash, or PROJECT@HASH.
func isHookRef(arg string) bool {
	if i := strings.LastIndexByte(arg, '@'); i >= 0 {
		arg = arg[i+1:]
	}
	return hooks.IsHash(strings.ToLower(arg))
}

// Set records a flag value as if given on the command line (for callers that
// build settings in code, such as tests).
func (f *Flags) Set(flagName, value string) error {
	for i := range Table {
		if Table[i].Flag == flagName {
			var probe Settings
			if err := Table[i].kind.parse(&probe, value); err != nil {
				return fmt.Errorf("--%s: %w", flagName, err)
			}
			f.set = append(f.set, flagValue{&Table[i], value})
			return nil
		}
	}
	return fmt.Errorf("no setting has the flag --%s", flagName)
}

// Args are the flags as a command line that Register parses back into the
// same Flags (a forwarder passes them to the daemon).
func (f *Flags) Args() []string {
	if f == nil {
		return nil
	}
	out := make([]string, 0, len(f.set))
	for _, v := range f.set {
		out = append(out, "-"+v.setting.Flag+"="+v.value)
	}
	return out
}

// Resolve combines the defaults, the environment, initializationOptions (raw
// JSON, may be empty) and the flags, lowest to highest. It returns the
// settings and warnings about initializationOptions keys no setting reads; a
// value of the wrong type or out of range is an error naming the setting.
func Resolve(getenv func(string) string, initOptions json.RawMessage, flags *Flags) (Settings, []string, error) {
	s := Defaults(getenv)
	for _, st := range Table {
		if st.Env == "" {
			continue
		}
		if v := getenv(st.Env); v != "" {
			if err := st.kind.parse(&s, v); err != nil {
				return Settings{}, nil, fmt.Errorf("%s=%s: %w", st.Env, v, err)
			}
		}
	}
	var warnings []string
	if len(initOptions) > 0 && string(initOptions) != "null" {
		var tree map[string]json.RawMessage
		if err := json.Unmarshal(initOptions, &tree); err != nil {
			return Settings{}, nil, fmt.Errorf("initializationOptions must be an object: %w", err)
		}
		for _, st := range Table {
			raw, ok := lookup(tree, st.Init)
			if !ok || string(raw) == "null" {
				continue
			}
			if err := st.kind.parseJSON(&s, raw); err != nil {
				return Settings{}, nil, fmt.Errorf("initializationOptions.%s: %w", st.Init, err)
			}
		}
		warnings = unknownKeys(tree, "")
	}
	if flags != nil {
		replaced := map[*Setting]bool{}
		for _, fv := range flags.set {
			if fv.setting.kind.typ == "list" && !replaced[fv.setting] {
				// Patterns given as flags replace those of lower sources, then add up.
				fv.setting.kind.parseJSON(&s, json.RawMessage("[]"))
				replaced[fv.setting] = true
			}
			if err := fv.setting.kind.parse(&s, fv.value); err != nil {
				return Settings{}, nil, fmt.Errorf("--%s: %w", fv.setting.Flag, err)
			}
		}
	}
	if s.APIKeyEnv == "" {
		s.APIKeyEnv = "OPENAI_API_KEY"
	}
	s.APIKey = getenv(s.APIKeyEnv)
	return s, warnings, nil
}

// lookup walks a dotted path in a JSON object tree.
func lookup(tree map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	head, rest, nested := strings.Cut(path, ".")
	raw, ok := tree[head]
	if !ok || !nested {
		return raw, ok
	}
	var sub map[string]json.RawMessage
	if json.Unmarshal(raw, &sub) != nil {
		return nil, false
	}
	return lookup(sub, rest)
}

// unknownKeys lists the dotted paths of tree that no setting reads.
func unknownKeys(tree map[string]json.RawMessage, prefix string) []string {
	var out []string
	for key, raw := range tree {
		path := prefix + key
		known, parent := false, false
		for _, st := range Table {
			known = known || st.Init == path
			parent = parent || strings.HasPrefix(st.Init, path+".")
		}
		switch {
		case known:
		case parent:
			var sub map[string]json.RawMessage
			if json.Unmarshal(raw, &sub) == nil {
				out = append(out, unknownKeys(sub, path+".")...)
			}
		default:
			out = append(out, "initializationOptions."+path+" is not a setting of agent-lsp; ignored")
		}
	}
	slices.Sort(out)
	return out
}

// Markdown is the settings table of docs/configuration.md and docs/protocol.md.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| setting | environment | `initializationOptions` | flag | default | what it does |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	code := func(v string) string {
		if v == "" {
			return "–"
		}
		return "`" + v + "`"
	}
	for _, st := range Table {
		flag := ""
		if st.Flag != "" {
			flag = "--" + st.Flag
		}
		def := code(st.Default)
		if st.kind.typ == "list" || st.kind.typ == "table" || st.kind.typ == "object" {
			def = st.Default
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", st.Name, code(st.Env), code(st.Init), code(flag), def, st.Doc)
	}
	return b.String()
}
