package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/store"
)

// Command describes one workspace/executeCommand command of agent-lsp: its
// name, what it does, and its argument and result types (for the docs and the
// protocol fixtures). The table Commands is the registration: it feeds
// executeCommandProvider.commands, executeCommand's lookup and docs/protocol.md.
type Command struct {
	Name   string
	Doc    string
	Args   reflect.Type // a struct; fields tagged required:"true" must be given
	Result string       // the result, in words, for the docs
	handle func(s *Server, ctx context.Context, call commandCall, raw json.RawMessage) (any, error)
}

// commandCall is what a command handler knows of its request besides its arguments.
type commandCall struct {
	id    jsonrpc2.ID
	token protocol.ProgressToken // the request's workDoneToken; nil when absent
	b     *Backend
}

// validator is implemented by argument types with checks beyond required fields.
type validator interface{ validate() error }

// command binds a handler with typed arguments A and result R to a name. It
// decodes arguments[0] into A, checks its required fields and validate, and
// answers a problem with InvalidParams naming the command.
func command[A any, R any](name, doc, result string, fn func(*Server, context.Context, commandCall, A) (R, error)) Command {
	return Command{Name: name, Doc: doc, Args: reflect.TypeFor[A](), Result: result,
		handle: func(s *Server, ctx context.Context, call commandCall, raw json.RawMessage) (any, error) {
			var a A
			if len(raw) > 0 && string(raw) != "null" {
				if err := json.Unmarshal(raw, &a); err != nil {
					return nil, invalidParams("%s: arguments[0] must be an object with the command's fields: %v", name, err)
				}
			}
			if err := checkRequired(a); err != nil {
				return nil, invalidParams("%s: %v", name, err)
			}
			if v, ok := any(a).(validator); ok {
				if err := v.validate(); err != nil {
					return nil, invalidParams("%s: %v", name, err)
				}
			}
			return fn(s, ctx, call, a)
		}}
}

// Commands is every agent.* command, in the order the docs list them.
var Commands = append([]Command{
	command("agent.run", "Runs the agent on a prompt, in a new session or continuing one; returns when the run ends. Given the session of a running run (in any window of the daemon), it queues the prompt for that run's next step and returns at once; that window then receives the session's events. A session continues only in a window that has its folder open. mode is agent, plan or ask (plan and ask offer only the tools that read; a plan run's result carries plan); maxTokens and maxCost bound what the run spends (docs/modes.md). images are [{path} | {data, mimeType}] (docs/images-and-fetch.md); a model that takes no images refuses them before any call. retry: true (with session, without prompt) rewinds the conversation to before the session's last prompt and sends that prompt again, with model if given (docs/rewind.md). isolation \"worktree\" runs it in a git worktree of the project's HEAD on a new branch, outside the project; the project's uncommitted changes are not in it (docs/worktrees.md).",
		"`{session, status, reply, edits, steps, usage, error?, reason?, queued?, position?, limit?, plan?, branch?, worktree?}`; branch: a run with isolation worktree committed its changes to it (docs/worktrees.md); status is done, cancelled, failed (with error, and reason when a setting fixes it), limit (with limit: steps, tokens or cost), or queued (with position; the running run's result covers the prompt); a cancelled run lists the prompts it never read in queued", (*Server).runCommand),
	command("agent.resume", "Continues an interrupted run from its last checkpoint, without adding a prompt.",
		"as agent.run", (*Server).resumeCommand),
	command("agent.cancel", "Cancels a session's running run; the run's own request then ends with status cancelled.",
		"`{cancelled}`: whether a run was going", (*Server).cancelCommand),
	command("agent.sessions", "Lists the stored sessions of the store (every window's), newest first.",
		"`[{session, project, root, model?, edits?, title, status, created, updated, messages, notStored?}]`; status is running (running now, in any window), interrupted (cut off by a crash or a kill: resume it), or how the last run ended; root is the project's folder; model is its last run's model; edits is `apply` or `review` once an ACP client chose the session's mode (session/set_mode); notStored: kept in this window's memory only, because the store could not be opened (it is gone when the server ends)", (*Server).sessionsCommand),
	command("agent.session", "Returns a session's transcript and the subagents it started; with context, a subagent's transcript instead.",
		"`{session, context?, project, status, title, messages: [{id, role, name?, content, toolCalls?, toolCallId?}], subagents: [{contextId, task, status}]}`", (*Server).sessionCommand),
	command("agent.deleteSession", "Deletes a session with its checkpoints and subagents.",
		"`{deleted}`: whether it existed", (*Server).deleteSessionCommand),
	command("agent.processes", "Lists the background processes running now (run_command with background: true; docs/background.md), of every running session or of one.",
		"`[{session, id, command, project, started}]`", (*Server).processesCommand),
	command("agent.stopProcess", "Stops a background process of a running session, and every process it started; returns once they are gone.",
		"`{stopped}`; an error when the session is not running or has no such process", (*Server).stopProcessCommand),
	command("agent.projects", "Lists the projects (workspace folders) with what detection found, their runtime context, and how their commands are sandboxed here (isolation: namespaces, snapshot where user namespaces are refused, seatbelt on macOS, restricted-token on Windows, or none; docs/security.md).",
		"`[{name, path, type, techStack: {language, languageVersion?, packageManager?, buildCommand?, testCommand?, manifests?, others?}, gitBranch?, context: {openFiles, pendingChanges, lastBuild, lastTest, recentErrors}, sandbox: {mode, landlockABI, isolation, processes?, enforced, notEnforced?, writable?, network}}]`",
		(*Server).projectsCommand),
	command("agent.models", "Lists the models the endpoint offers (its GET /models), and the one runs use unless agent.run names another.",
		"`{baseURL, current, models: [{id, ownedBy?}]}`; an endpoint without a model list is an error that says so, with its URL", (*Server).modelsCommand),
	command("agent.endpoint", "Says which endpoint, model and API key variable the next runs use and whether a key is set, without asking the endpoint: what an empty chat shows.",
		"`{baseURL, model, apiKeyEnv, keySet, needsKey}`; needsKey: the endpoint needs a key and none is set, so runs are refused at once (data.reason no-api-key)", (*Server).endpointCommand),
	command("agent.mcp", "Lists each project's MCP servers: where each is defined, whether it runs (or why not: failed, waiting for approval, denied) and how many tools it gives.",
		"`[{project, root, servers: [{name, source, origin, transport, status, reason?, tools}]}]`; tools is -1 before a server's first listing", (*Server).mcpCommand),
	command("agent.commands", "Lists the slash commands a prompt of the project may start with (/name): the built-ins, the user's and the project's command files (docs/customization.md).",
		"`{commands: [{name, description, argumentHint?, source, path?, error?}]}`; name is without the slash; source is builtin, user or project; path is the file; error says why a file cannot run", (*Server).commandsCommand),
	command("agent.switchProject", "Makes another project the current one of a session that is not running; its next run or resume works there, and the model is told.",
		"`{session, project}`", (*Server).switchProjectCommand),
}, rewindCommands...) // the rewind rows: server/rewind.go

// commandNames lists the command names for executeCommandProvider.commands.
func commandNames() []string {
	out := make([]string, len(Commands))
	for i, c := range Commands {
		out[i] = c.Name
	}
	return out
}

func (s *Server) executeCommand(ctx context.Context, id jsonrpc2.ID, params json.RawMessage) (any, error) {
	p, err := decode[protocol.ExecuteCommandParams]("workspace/executeCommand", params)
	if err != nil {
		return nil, err
	}
	if p.Command == "" {
		return nil, invalidParams("workspace/executeCommand: missing command")
	}
	for _, c := range Commands {
		if c.Name != p.Command {
			continue
		}
		b, _ := s.life.get()
		call := commandCall{id: id, b: b, token: p.WorkDoneToken}
		var raw json.RawMessage
		if len(p.Arguments) > 0 {
			raw = json.RawMessage(p.Arguments[0])
		}
		return c.handle(s, ctx, call, raw)
	}
	return nil, invalidParams("unknown command %q (commands: %s)", p.Command, strings.Join(commandNames(), ", "))
}

// checkRequired refuses a struct whose fields tagged required:"true" are empty.
func checkRequired(a any) error {
	v := reflect.ValueOf(a)
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Tag.Get("required") != "true" {
			continue
		}
		fv := v.Field(i)
		if fv.IsZero() || (fv.Kind() == reflect.String && strings.TrimSpace(fv.String()) == "") {
			return fmt.Errorf("missing required argument %q", jsonName(f))
		}
	}
	return nil
}

// jsonName is a struct field's name on the wire.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// ArgumentNames lists a command's argument names for the docs: required ones
// marked as such.
func (c Command) ArgumentNames() []string {
	var out []string
	for i := range c.Args.NumField() {
		f := c.Args.Field(i)
		n := "`" + jsonName(f) + "`"
		if f.Tag.Get("required") == "true" {
			n += " (required)"
		}
		out = append(out, n)
	}
	return out
}

// sessionError turns a runtime or store error about a session into a JSON-RPC
// error: unknown sessions and projects and busy sessions are the caller's
// problem (InvalidParams), the rest is the server's.
func sessionError(command string, err error) error {
	var tooLarge *agent.TooLargeError
	var image *agent.ImageError
	switch {
	case errors.As(err, &tooLarge), errors.As(err, &image):
		return invalidParams("%s: %v", command, err)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, agent.ErrUnknownSession), errors.Is(err, agent.ErrUnknownProject),
		errors.Is(err, agent.ErrSessionBusy), errors.Is(err, agent.ErrNoProject), errors.Is(err, agent.ErrBadSelection),
		errors.Is(err, agent.ErrFolderNotOpen), errors.Is(err, agent.ErrNoPrice), slashError(err):
		return invalidParams("%s: %v", command, err)
	}
	return jsonrpc2.Errorf(jsonrpc2.InternalError, "%s: %v", command, err)
}
