package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/agent-lsp/agent-lsp/store/postgres"

	"github.com/agent-lsp/agent-lsp/agent/langserver"
	mcpdef "github.com/agent-lsp/agent-lsp/agent/mcp"
	llm "github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/config"
	"github.com/agent-lsp/agent-lsp/server/daemon"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
	"github.com/agent-lsp/agent-lsp/workspace/git"
)

const doctorUsage = `Usage: agent-lsp doctor [--json] [--workspace DIR]... [serve flags]

Checks what the next run needs, without starting a server: the settings
(resolved from the environment and the flags, as the server resolves them
before an editor's initializationOptions), whether an API key is present
(never showing it), a live GET of the endpoint's model list (5s at most),
the session store and its daemon (not opening the store), what the sandbox
enforces on this kernel, and the projects of the workspace folders.

  agent-lsp doctor
  agent-lsp doctor --json --workspace ~/src/app --model qwen2.5-coder:7b

An editor's initializationOptions can change these settings: pass the same
model, endpoint and store as flags to check them. Doctor looks for the key in
OPENAI_API_KEY (model.apiKeyEnv, which can name another variable, has no flag).

Exit status: 0 ready (warnings do not stop a run), 1 something the next run
needs is broken (no key for api.openai.com, endpoint unreachable, key
refused, store not writable, model not offered), 2 usage error.

Flags:
`

// doctorTimeout bounds the endpoint check.
const doctorTimeout = 5 * time.Second

// doctorReport is what agent-lsp doctor found; --json prints it.
type doctorReport struct {
	OK       bool            `json:"ok"` // no problem: the next run should work
	Version  string          `json:"version"`
	Platform string          `json:"platform"` // Go version, OS and architecture
	Model    string          `json:"model"`
	BaseURL  string          `json:"baseURL"`
	APIKey   doctorKey       `json:"apiKey"`
	Endpoint doctorEndpoint  `json:"endpoint"`
	Store    doctorStore     `json:"store"`
	Sandbox  *sandbox.Report `json:"sandbox"` // for a project at <project>; each project has its own
	Projects []doctorProject `json:"projects"`
	Problems []string        `json:"problems"` // what breaks the next run
	Warnings []string        `json:"warnings"` // what is worth knowing but does not stop a run
}

// doctorKey says whether the API key is present; never the key.
type doctorKey struct {
	Variable string `json:"variable"`
	Present  bool   `json:"present"`
}

// doctorEndpoint is the live check: GET {baseURL}/models.
type doctorEndpoint struct {
	URL string `json:"url"`
	// Status is ok, "no model list" (404, 405 or 501: fine for many local
	// servers), failed, or skipped (no key for OpenAI's API).
	Status       string   `json:"status"`
	LatencyMs    float64  `json:"latencyMs"`
	HTTPStatus   int      `json:"httpStatus,omitempty"` // when the endpoint answered other than 200
	ModelCount   int      `json:"modelCount"`
	Models       []string `json:"models,omitempty"`       // IDs, when there is a list
	ModelOffered *bool    `json:"modelOffered,omitempty"` // when there is a list
	Error        string   `json:"error,omitempty"`
}

// doctorStore is the session store: who serves it and whether it can be written.
type doctorStore struct {
	Path string `json:"path"`
	// ServedBy is "daemon" (the per-user daemon, running or started when
	// needed) or "in-process" (AGENT_LSP_DAEMON=off, --no-daemon).
	ServedBy string         `json:"servedBy"`
	Daemon   *daemon.Status `json:"daemon,omitempty"` // the daemon running now
	Exists   bool           `json:"exists"`
	Writable bool           `json:"writable"`
	Error    string         `json:"error,omitempty"`
}

// doctorProject is one workspace folder as the server would detect it (the
// fields of agent.projects, without the runtime context).
type doctorProject struct {
	Name string `json:"name"`
	Path string `json:"path"`
	workspace.Info
	Sandbox sandbox.Report `json:"sandbox"`
	MCP     []doctorMCP    `json:"mcp"` // the MCP servers its runs may use; doctor starts none
	// LanguageServers are the language servers agent-lsp would start for it
	// (headless, ACP, an editor without language features); doctor starts none.
	LanguageServers []langserver.Candidate `json:"languageServers"`
}

// doctorMCP is one MCP server a project's runs may use.
type doctorMCP struct {
	Name      string `json:"name"`
	Source    string `json:"source"` // user, editor, flag or project
	Origin    string `json:"origin"`
	Transport string `json:"transport"`
	Command   string `json:"command"` // what it runs (or its URL); never a variable's value
	Ref       string `json:"ref"`     // NAME@HASH, what --allow-mcp approves
	// Approval is "needed" for a repository's server that --allow-mcp does
	// not name (the editor asks at the project's first run; headless runs
	// do not start it), else "not needed".
	Approval string `json:"approval"`
}

func doctorCommand(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("agent-lsp doctor", doctorUsage, "", stdout, stderr)
	var workspaces multiFlag
	asJSON := fs.Bool("json", false, "print one JSON object")
	fs.Var(&workspaces, "workspace", "workspace folder whose projects to detect (repeatable; default: the current directory)")
	noDaemon := fs.Bool("no-daemon", false, "check the store as a server started with --no-daemon would use it (also AGENT_LSP_DAEMON=off)")
	fs.Bool("stdio", true, "accepted, as serve accepts it")
	flags := config.Register(fs)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agent-lsp doctor: unexpected argument %q (see agent-lsp doctor --help)\n", fs.Arg(0))
		return 2
	}
	if len(workspaces) == 0 {
		wd, err := os.Getwd()
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp doctor: %v\n", err)
			return 2
		}
		workspaces = multiFlag{wd}
	}
	for i, w := range workspaces {
		abs, err := filepath.Abs(w)
		if err != nil {
			fmt.Fprintf(stderr, "agent-lsp doctor: --workspace %s: %v\n", w, err)
			return 2
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			fmt.Fprintf(stderr, "agent-lsp doctor: --workspace %s: not a folder\n", w)
			return 2
		}
		workspaces[i] = abs
	}
	r := diagnose(context.Background(), os.Getenv, flags, !*noDaemon && daemonEnabled(os.Getenv), workspaces)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		enc.Encode(r)
	} else {
		r.print(stdout)
	}
	if !r.OK {
		return 1
	}
	return 0
}

// diagnose checks everything the next run needs; it starts no server and
// opens no store.
func diagnose(ctx context.Context, getenv func(string) string, flags *config.Flags, daemonOn bool, folders []string) *doctorReport {
	r := &doctorReport{Version: server.Version, Platform: fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH),
		Projects: []doctorProject{}, Problems: []string{}, Warnings: []string{}}
	defer func() { r.OK = len(r.Problems) == 0 }()
	st, _, err := config.Resolve(getenv, nil, flags)
	if err != nil {
		r.Problems = append(r.Problems, "settings: "+err.Error())
		return r
	}
	r.Model, r.BaseURL = st.Model, strings.TrimRight(st.BaseURL, "/")
	r.APIKey = doctorKey{Variable: st.APIKeyEnv, Present: st.APIKey != ""}
	openAI := strings.Contains(st.BaseURL, "api.openai.com")
	if r.APIKey.Present && len(st.APIKey) < llm.MinRedactedKey {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the API key in %s is shorter than %d characters: it is not redacted from what the endpoint answers (a short key is likely a word)", st.APIKeyEnv, llm.MinRedactedKey))
	}
	if !r.APIKey.Present {
		if openAI {
			r.Problems = append(r.Problems, fmt.Sprintf("no API key: set %s (or point OPENAI_BASE_URL at a local server)", st.APIKeyEnv))
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("no API key in %s: fine for local servers that need none", st.APIKeyEnv))
		}
	}
	r.checkEndpoint(ctx, st, openAI)
	r.checkStore(st.StorePath, daemonOn)
	r.checkSandbox(st, getenv, folders)
	for _, dir := range git.Left(git.StateDir(getenv)) {
		r.Warnings = append(r.Warnings, "a run's git worktree is left in "+dir+" (a run that crashed, or one still going): its changes are there; resuming its session continues in it, else commit them there and `git worktree remove` it (docs/worktrees.md)")
	}
	return r
}

// checkEndpoint lists the endpoint's models and looks for the configured one.
func (r *doctorReport) checkEndpoint(ctx context.Context, st config.Settings, openAI bool) {
	m := llm.NewOpenAI(llm.Config{BaseURL: st.BaseURL, Model: st.Model, APIKey: st.APIKey, Timeout: doctorTimeout})
	r.Endpoint.URL = m.BaseURL() + "/models"
	if st.APIKey == "" && openAI {
		r.Endpoint.Status = "skipped"
		r.Endpoint.Error = "no API key"
		return
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	start := time.Now()
	models, err := m.Models(ctx)
	r.Endpoint.LatencyMs = math.Round(float64(time.Since(start).Microseconds())/100) / 10
	var se *llm.StatusError
	if errors.As(err, &se) {
		r.Endpoint.HTTPStatus = se.Code
	}
	switch {
	case err == nil:
		r.Endpoint.Status = "ok"
	case errors.Is(err, llm.ErrNoModelList):
		r.Endpoint.Status = "no model list"
		r.Endpoint.Error = err.Error()
		r.Warnings = append(r.Warnings, "the endpoint has no model list (fine for many local servers): whether it serves "+st.Model+" shows at the first run")
		return
	case errors.As(err, &se) && (se.Code == 403 || se.Code == 429):
		// A key without the right to list models (403), or over its rate (429): chat may work.
		r.Endpoint.Status = "failed"
		r.Endpoint.Error = err.Error()
		r.Warnings = append(r.Warnings, "the model list: "+err.Error()+" (chat may still work)")
		return
	default:
		r.Endpoint.Status = "failed"
		r.Endpoint.Error = err.Error()
		msg := err.Error()
		if errors.Is(err, llm.ErrKeyRefused) {
			msg += fmt.Sprintf(" (check %s)", st.APIKeyEnv)
		}
		r.Problems = append(r.Problems, msg)
		return
	}
	r.Endpoint.ModelCount = len(models)
	r.Endpoint.Models = make([]string, 0, len(models))
	for _, mi := range models {
		r.Endpoint.Models = append(r.Endpoint.Models, mi.ID)
	}
	offered := llm.Offers(models, st.Model)
	r.Endpoint.ModelOffered = &offered
	switch {
	case offered && len(models) == 1 && models[0].OwnedBy == "llamacpp" && models[0].ID != st.Model:
		r.Warnings = append(r.Warnings, fmt.Sprintf("model %s is not listed, but llama.cpp's server runs %s whatever the name", st.Model, models[0].ID))
	case offered:
	case len(models) == 0:
		r.Problems = append(r.Problems, fmt.Sprintf("model %s is not offered: the endpoint lists no models", st.Model))
	default:
		r.Problems = append(r.Problems, fmt.Sprintf("model %s is not offered; the endpoint offers %s (set AGENT_LSP_MODEL or --model)",
			st.Model, someNames(r.Endpoint.Models, 12)))
	}
}

// someNames lists at most n names, saying how many more there are.
func someNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// checkStore says who serves the store and whether it can be written,
// without opening it: it asks the daemon, else checks the file's (or its
// nearest folder's) permissions and probes its lock for an instant.
func (r *doctorReport) checkStore(path string, daemonOn bool) {
	if postgres.IsURL(path) {
		r.checkDatabase(path)
		return
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	s := &r.Store
	s.Path = path
	s.ServedBy = "in-process"
	if daemonOn {
		s.ServedBy = "daemon"
	}
	status, err := daemon.StatusOf(path)
	switch {
	case err == nil:
		s.Daemon, s.Exists, s.Writable = &status, true, true
		if !daemonOn {
			r.Warnings = append(r.Warnings, fmt.Sprintf("a daemon (pid %d) holds the store, and the daemon is turned off here: a server started now keeps its sessions in memory", status.Pid))
		}
		return
	case !daemon.IsNoDaemon(err):
		s.Error = err.Error()
		r.Problems = append(r.Problems, "store: "+err.Error())
		return
	}
	exists, err := storeWritable(path, daemonOn)
	s.Exists = exists
	if err != nil {
		s.Error = err.Error()
		r.Problems = append(r.Problems, "store: "+err.Error())
		return
	}
	s.Writable = true
	if exists && lockedByAnother(path) {
		r.Warnings = append(r.Warnings, "another process holds the store (a server started with --no-daemon?): a server started now keeps its sessions in memory until it ends")
	}
}

// checkDatabase reports a PostgreSQL store: reachable, and its schema
// created or migrated (Open does that); the URL without its password.
func (r *doctorReport) checkDatabase(url string) {
	s := &r.Store
	s.Path, s.ServedBy = postgres.Redact(url), "PostgreSQL (shared; no daemon)"
	ctx, cancel := context.WithTimeout(context.Background(), 2*postgres.ConnectTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, url)
	if err != nil {
		s.Error = err.Error()
		r.Problems = append(r.Problems, "store: "+err.Error())
		return
	}
	db.Close()
	s.Exists, s.Writable = true, true
}

// storeWritable checks that the store file can be written, or created when
// it does not exist (its folders too), without creating anything. The
// daemon also writes its address, lock and log beside the file.
func storeWritable(path string, daemonOn bool) (exists bool, err error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return true, fmt.Errorf("%s is a folder, not a store file", path)
	case err == nil:
		if err := access(path, accessW); err != nil {
			return true, fmt.Errorf("cannot write %s: %w", path, err)
		}
		if daemonOn {
			if err := access(filepath.Dir(path), accessW|accessX); err != nil {
				return true, fmt.Errorf("cannot write in %s (the daemon keeps its address beside the store): %w", filepath.Dir(path), err)
			}
		}
		return true, nil
	case !errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("cannot create %s: %w", path, err)
	}
	for dir := filepath.Dir(path); ; {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && !fi.IsDir():
			return false, fmt.Errorf("cannot create %s: %s is not a folder", path, dir)
		case err == nil:
			if err := access(dir, accessW|accessX); err != nil {
				return false, fmt.Errorf("cannot create %s: %s: %w", path, dir, err)
			}
			return false, nil
		case !errors.Is(err, fs.ErrNotExist):
			return false, fmt.Errorf("cannot create %s: %w", path, err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false, fmt.Errorf("cannot create %s: %w", path, err)
		}
		dir = parent
	}
}

// lockedByAnother reports whether another process holds the store's file
// lock (bbolt's).
func lockedByAnother(path string) bool { return store.HeldByAnother(path) }

// checkSandbox reports what the sandbox enforces here, and detects the
// projects of folders as the server does, each with its own policy.
func (r *doctorReport) checkSandbox(st config.Settings, getenv func(string) string, folders []string) {
	sb, err := sandbox.New(st.Landlock)
	if err != nil {
		r.Problems = append(r.Problems, err.Error())
		return
	}
	mode, _ := sandbox.ParseMode(st.Sandbox) // checked when the settings were resolved
	confine := sandbox.Settings{Mode: mode, Writable: st.SandboxWritable, Network: st.SandboxNetwork, Temp: os.TempDir(), Getenv: getenv}
	gp := confine.Policy("", "", "<project>")
	if gp.GoCache != "" && getenv(sandbox.GoCacheEnv) == "" {
		gp.GoCache = filepath.Join(filepath.Dir(gp.GoCache), "<one per project>")
	}
	general := sb.Describe(gp)
	r.Sandbox = &general
	switch {
	case mode == sandbox.Off:
		r.Warnings = append(r.Warnings, "the sandbox is off: commands run with your full rights")
	case sb.Unconfined() != "":
		r.Warnings = append(r.Warnings, "commands are not sandboxed: "+sb.Unconfined()+"; every command asks first, the project's build and test included")
	case general.Isolation == sandbox.RestrictedToken && !gp.Network:
		r.Warnings = append(r.Warnings, "Windows cannot turn one command's network off: commands of projects whose network is off (sandbox.network) ask first, "+
			"the project's build and test included; a restricted token confines their writes all the same (docs/security.md)")
	case general.Isolation == sandbox.Snapshot:
		r.Warnings = append(r.Warnings, "commands run without namespaces here (snapshot): git metadata and protected files are restored after each command instead of being read-only, "+
			"and UDP, pathname Unix sockets and /tmp are not isolated (docs/security.md)")
	}
	if general.Isolation == sandbox.Seatbelt {
		r.Warnings = append(r.Warnings, "nothing bounds the number of a command's processes or their memory on macOS (Seatbelt confines files, the network and IPC; docs/security.md)")
	} else if general.Isolation != sandbox.None && general.Processes == "" {
		r.Warnings = append(r.Warnings, "nothing bounds the number of a command's processes here: no writable pids cgroup, and root ignores RLIMIT_NPROC")
	}
	ws := workspace.New(workspace.UTF8)
	for _, dir := range folders {
		p, err := ws.Add(filepath.Base(dir), dir)
		if err != nil {
			r.Warnings = append(r.Warnings, "workspace folder skipped: "+err.Error())
			continue
		}
		snap := p.Snapshot()
		defs, notes := session.MCPDefinitions(st, ws, getenv, p)
		r.Warnings = append(r.Warnings, notes...)
		servers := []doctorMCP{}
		for _, d := range defs {
			approval := "not needed"
			if d.Source == mcpdef.SourceProject && !mcpdef.Allowed(st.AllowMCP, d) {
				approval = "needed"
			}
			servers = append(servers, doctorMCP{Name: d.Name, Source: string(d.Source), Origin: d.Origin, Transport: string(d.Transport), Command: d.Summary(), Ref: d.Ref(), Approval: approval})
		}
		r.Projects = append(r.Projects, doctorProject{Name: snap.Name, Path: snap.Path, Info: snap.Info,
			Sandbox: sb.Describe(confine.Policy(snap.Name, string(snap.Type), snap.Path)), MCP: servers, LanguageServers: languageServers(st, snap)})
		if snap.Type == workspace.Unknown {
			r.Warnings = append(r.Warnings, fmt.Sprintf("project %s: no manifest found (go.mod, package.json, Cargo.toml, ...): the agent knows no build or test command for it", snap.Name))
		}
	}
}

// languageServers lists the language servers agent-lsp would start for a
// project, from the settings and the PATH (starting none).
func languageServers(st config.Settings, snap workspace.Snapshot) []langserver.Candidate {
	settings, _ := langserver.ParseSettings(st.LanguageServers) // checked when the settings were resolved
	env := os.Environ()
	return langserver.Candidates(settings, string(snap.Type), snap.Path, func(name string) string { return langserver.LookPath(name, env) })
}

// languageLines are a project's language servers as doctor prints them.
func languageLines(cs []langserver.Candidate) []string {
	var out []string
	for _, c := range cs {
		switch {
		case c.Found:
			out = append(out, fmt.Sprintf("lang:  %s (%s): %s", c.Command, c.Source, c.Path))
		case c.Name != "":
			out = append(out, fmt.Sprintf("lang:  %s not found: %s", c.Name, c.Note))
		default:
			out = append(out, "lang:  "+c.Note)
		}
	}
	return out
}

// Marks of the human output.
const (
	markOK   = "✓"
	markFail = "✗"
	markWarn = "!"
	markInfo = " "
)

// printLine writes one check's aligned line, and its more lines below it.
type printLine func(mark, label, text string, more ...string)

// print writes the report for a person: one aligned line per check, and a
// verdict.
func (r *doctorReport) print(w io.Writer) {
	line := func(mark, label, text string, more ...string) {
		fmt.Fprintf(w, "%s %-11s %s\n", mark, label, text)
		for _, m := range more {
			fmt.Fprintf(w, "  %-11s   %s\n", "", m)
		}
	}
	line(markInfo, "version", fmt.Sprintf("agent-lsp %s (%s)", r.Version, r.Platform))
	if r.Model == "" { // the settings did not resolve
		r.printVerdict(w)
		return
	}
	line(markInfo, "model", r.Model)
	line(markInfo, "endpoint", r.BaseURL)
	switch {
	case r.APIKey.Present:
		line(markOK, "API key", "present in "+r.APIKey.Variable)
	case r.Endpoint.Status == "skipped":
		line(markFail, "API key", "missing: set "+r.APIKey.Variable+" (OpenAI's API needs one)")
	default:
		line(markWarn, "API key", "none in "+r.APIKey.Variable+" (fine for local servers that need none)")
	}
	r.printModelList(line)
	r.printStore(line)
	r.printSandbox(line)
	r.printProjects(line)
	r.printVerdict(w)
}

// printModelList prints what the endpoint's model list said.
func (r *doctorReport) printModelList(line printLine) {
	e := r.Endpoint
	switch e.Status {
	case "ok":
		text := fmt.Sprintf("GET /models answered in %s: %d model(s)", latency(e.LatencyMs), e.ModelCount)
		switch {
		case r.hasWarning("llama.cpp's server runs"):
			line(markWarn, "model list", text+", "+r.Model+" not listed (llama.cpp serves its one model under any name)")
		case e.ModelOffered != nil && *e.ModelOffered:
			line(markOK, "model list", text+", "+r.Model+" offered")
		default:
			line(markFail, "model list", text+", "+r.Model+" NOT offered", "offered: "+someNames(e.Models, 12))
		}
	case "no model list":
		line(markWarn, "model list", fmt.Sprintf("no model list (fine for many local servers): GET /models answered %d %s in %s",
			e.HTTPStatus, http.StatusText(e.HTTPStatus), latency(e.LatencyMs)))
	case "skipped":
		line(markWarn, "model list", "not checked: no API key")
	default:
		mark := markFail
		if !r.hasProblem(e.Error) {
			mark = markWarn
		}
		line(mark, "model list", fmt.Sprintf("failed after %s: %s", latency(e.LatencyMs), e.Error))
	}
}

// printStore prints the store's path and who serves it.
func (r *doctorReport) printStore(line printLine) {
	s := r.Store
	switch {
	case s.Error != "":
		line(markFail, "store", s.Path+": "+s.Error)
	case s.Daemon != nil:
		line(markOK, "store", s.Path, fmt.Sprintf("served by the daemon (pid %d, agent-lsp %s, %d connection(s), %d running)",
			s.Daemon.Pid, s.Daemon.Version, s.Daemon.Connections, s.Daemon.Running))
	default:
		how := "opened in-process by each server (the daemon is off)"
		if s.ServedBy == "daemon" {
			how = "no daemon runs now: the first server starts one"
		}
		state := "writable"
		if !s.Exists {
			state = "created at first use"
		}
		mark := markOK
		if r.hasWarning("another process holds the store") {
			mark, how = markWarn, how+"; another process holds it now"
		}
		line(mark, "store", s.Path, state+"; "+how)
	}
}

// printSandbox prints the sandbox's mode and what it enforces, when known.
func (r *doctorReport) printSandbox(line printLine) {
	if sb := r.Sandbox; sb != nil {
		mark, head := markOK, fmt.Sprintf("%s, Landlock ABI %d, isolation %s", sb.Mode, sb.LandlockABI, sb.Isolation)
		if sb.Processes != "" {
			head += ", processes bounded by " + sb.Processes
		}
		if sb.Mode == sandbox.Off || sb.Isolation == sandbox.None || sb.Isolation == sandbox.Snapshot {
			mark = markWarn
		}
		var more []string
		for _, e := range sb.Enforced {
			more = append(more, "enforced: "+e)
		}
		for _, e := range sb.NotEnforced {
			more = append(more, "not enforced: "+e)
		}
		line(mark, "sandbox", head, more...)
	}
}

// printProjects prints each project with its commands, MCP servers and language servers.
func (r *doctorReport) printProjects(line printLine) {
	for _, p := range r.Projects {
		mark, text := markOK, fmt.Sprintf("%s (%s) %s", p.Name, p.Type, p.Path)
		var more []string
		if p.TechStack.BuildCommand != "" {
			more = append(more, "build: "+p.TechStack.BuildCommand)
		}
		if p.TechStack.TestCommand != "" {
			more = append(more, "test:  "+p.TechStack.TestCommand)
		}
		if p.Type == workspace.Unknown {
			mark, more = markWarn, append(more, "no manifest found: no build or test command")
		}
		for _, m := range p.MCP {
			note := ""
			if m.Approval == "needed" {
				note = " (the repository's: asked before it starts; headless needs --allow-mcp " + m.Ref + ")"
			}
			more = append(more, fmt.Sprintf("mcp:   %s (%s, %s): %s%s", m.Name, m.Source, m.Transport, m.Command, note))
		}
		more = append(more, languageLines(p.LanguageServers)...)
		line(mark, "project", text, more...)
	}
}

func (r *doctorReport) printVerdict(w io.Writer) {
	fmt.Fprintln(w)
	switch {
	case len(r.Problems) > 0:
		fmt.Fprintf(w, "%s not ready: %d problem(s)\n", markFail, len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintf(w, "  %s %s\n", markFail, p)
		}
	case len(r.Warnings) > 0:
		fmt.Fprintf(w, "%s ready, with %d warning(s)\n", markOK, len(r.Warnings))
	default:
		fmt.Fprintf(w, "%s ready: the next run should work\n", markOK)
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "  %s %s\n", markWarn, wn)
	}
}

// hasProblem reports whether a problem mentions sub.
func (r *doctorReport) hasProblem(sub string) bool {
	return slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, sub) })
}

// hasWarning reports whether a warning mentions sub.
func (r *doctorReport) hasWarning(sub string) bool {
	return slices.ContainsFunc(r.Warnings, func(p string) bool { return strings.Contains(p, sub) })
}

// latency formats milliseconds for a person.
func latency(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.1fms", ms)
	}
	return fmt.Sprintf("%.0fms", ms)
}
