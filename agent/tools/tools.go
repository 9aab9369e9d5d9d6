// Package tools holds the agent's tools and the ports they reach the editor
// and the user through. Every path goes through the project's boundary.
package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// Editor applies file changes in the editor (workspace/applyEdit in the
// server) and saves them before commands run.
type Editor interface {
	Edit(ctx context.Context, e FileEdit) (EditResult, error)
	// Save asks the editor to save the open documents of paths with unsaved
	// changes. ErrSaveUnsupported when it cannot.
	Save(ctx context.Context, paths []string) (SaveResult, error)
}

// TextReader is an Editor that reads files as the editor holds them, for a
// client whose documents the server is not shown (ACP's fs/read_text_file).
// read_file and the edit tools read through it; search and list_files read
// the disk.
type TextReader interface {
	// ReadText returns the editor's text of the file at path; ok is false
	// when the editor does not have it (then the disk is read).
	ReadText(ctx context.Context, path string) (text string, ok bool, err error)
}

// SaveResult is what the editor saved, and why it could not save the rest.
type SaveResult struct {
	Saved  []string
	Failed map[string]string // path -> reason
}

// ErrSaveUnsupported: the editor does not save documents for the agent.
var ErrSaveUnsupported = errors.New("the editor does not save documents for the agent")

// FileEdit is one change of one file.
type FileEdit struct {
	Path   string
	Rel    string     // Path relative to its project's root, with slashes
	Create bool       // create the file first; Edits then insert its content
	Edits  []TextEdit // ranges in the workspace's position encoding
	Label  string     // shown by the editor, e.g. "agent: edit main.go"
	// Open and Version: the edit's ranges refer to version Version of the
	// document open in the editor; when Open is false, to the file on disk.
	Open    bool
	Version int32
	// Decision is Path decided as the kernel resolves it (its names, hard
	// links, protected rules): Decision.Review(allowEdit) says why the edit
	// needs the user's confirmation.
	Decision workspace.Decision
}

// TextEdit replaces a range with new text.
type TextEdit struct {
	Range   workspace.Range
	NewText string
}

// EditResult is the editor's answer.
type EditResult struct {
	Applied       bool
	FailureReason string
	// Note is what the editor says of how an applied edit was written,
	// for the tool's result ("" for nothing worth telling), e.g. a file
	// rewritten in place rather than replaced whole.
	Note string
}

// Permissions decides whether a command line may run.
type Permissions interface {
	AllowCommand(ctx context.Context, req CommandRequest) (Permission, error)
}

// CommandRequest is a command line to run: which session wants to run it, in
// which project.
type CommandRequest struct {
	Session string
	Project string
	Command string
	// Trusted marks the project's own build or test command, unchanged in this
	// session: only a deny rule stops it.
	Trusted bool
	// Note tells the user why a command that usually runs without asking asks.
	Note string
	// AlwaysAsk: the sandbox cannot hold for this project now (a protected
	// file has another link, or a background process could outlive its
	// run), so no allow rule or earlier answer lets the command run
	// without asking.
	AlwaysAsk bool
	// Background: the command starts in the background, running until it
	// is stopped or the run ends.
	Background bool
	// RulesOnly is the mode ("plan", "ask") of a run that runs only what
	// the rules (and the session's earlier answers) allow and never asks
	// the user; "" asks as usual.
	RulesOnly string
}

// Permission is the answer for a command line.
type Permission struct {
	Allowed bool
	Reason  string // why it was not allowed (the deny rule, or the user's answer)
	// Hint is the rule that would allow it, in the client's words (e.g.
	// --allow "go build" for a headless run); "" when none would (a deny
	// rule, the user's answer).
	Hint string
}

// Denial is a call that did not run because it was not allowed: what it
// wanted (a command line, a tool) and the rule that would allow it.
type Denial struct {
	What string
	Hint string
}

// Trust knows, per project, whether the agent changed a file that defines the
// project's build and test commands (workspace.CommandFiles) in this session.
type Trust interface {
	Changed(project string) bool
	Change(project string)
}

// SubagentRequest is a task call_subagent gives a subagent.
type SubagentRequest struct {
	Task string
	// Agent names a subagent defined in a file ("" for the general one).
	Agent    string
	MaxLoops int  // 0 when not given (the default applies); at most MaxSubagentLoops
	ReadOnly bool // only the tools that read
	// Isolation "worktree": the subagent works in a git worktree of the
	// project's HEAD on a branch of its own ("" or "none": in the project,
	// unless its definition says worktree).
	Isolation string
}

// DefaultSubagentLoops are a subagent's model turns when neither the call
// nor its definition says.
const DefaultSubagentLoops = 10

// ReadOnlyTools are the tools a read-only subagent gets.
var ReadOnlyTools = []string{"read_file", "list_files", "search", "read_image", "diagnostics", "definition", "references", "implementations", "hover", "symbols"}

// SubagentResult is what a parent receives from a subagent.
type SubagentResult struct {
	OK        bool   `json:"ok"`
	Result    string `json:"result"`
	ContextID string `json:"context_id"`
	Loops     int    `json:"loops"`
	// Note tells the parent what differed from what was asked (a model the
	// settings do not allow, tools the definition named that do not exist).
	Note string `json:"note,omitempty"`
	// Branch is the branch a subagent in a worktree committed its changes
	// to; Worktree says what it committed (or where its changes were left).
	Branch   string `json:"branch,omitempty"`
	Worktree string `json:"worktree,omitempty"`
	// CommandFilesChanged are the projects whose build or test definitions
	// the subagent changed; the parent records them (not shown to the model).
	CommandFilesChanged []string `json:"-"`
}

// Env is what a tool call may reach: the run's current project, the
// workspace, and the ports. It is built per run, never global.
type Env struct {
	Workspace      *workspace.Workspace
	Session        string // the run's session
	Project        string // the run's current project
	Editor         Editor
	Permissions    Permissions
	Trust          Trust
	Subagent       func(ctx context.Context, req SubagentRequest) (SubagentResult, error)
	MaxOutput      int           // bytes of tool output kept; default DefaultMaxOutput
	CommandTimeout time.Duration // default for run_command; default 2 minutes
	// CommandEnv is the environment commands run with (see ScrubEnv); nil
	// means this process's environment scrubbed with DefaultScrubEnv.
	CommandEnv []string
	// Sandbox confines commands under the policy SandboxSettings make for
	// their project; nil runs them unconfined.
	Sandbox         *sandbox.Sandbox
	SandboxSettings sandbox.Settings
	// Lang is the run's language intelligence; nil: none (the language
	// tools say so, edits carry nothing extra).
	Lang *Lang
	// Vision is nil when the run's model takes images, else it says why
	// not (read_image then refuses); a nil Vision takes images.
	Vision func(ctx context.Context) error
	// ImageMaxBytes bounds an image read_image shows; default images.DefaultMaxBytes.
	ImageMaxBytes int
	// Fetch is how fetch_url reaches the web.
	Fetch FetchConfig
	// Intent records durably what the call is about to do outside the
	// session (an edit, a command, another program's tool): a tool calls
	// it right before, and does nothing when it fails. Nil records none.
	Intent func(ctx context.Context, in Intent) error
	// Output receives a command's output as it runs (its call's spool,
	// which Intent names); nil: none.
	Output io.Writer
	// Background holds the run's background processes; nil: none may start.
	Background *Background
	// WatchBackground, when set, is called once a background process this
	// call starts is running; the func it returns (nil: none) runs when the
	// process has ended, before process_wait, process_stop or the run's end
	// see it end (the agent looks there for the files it changed).
	WatchBackground func() (ended func())
	// RulesOnly is the mode of a run whose commands run only where the
	// rules allow them, never after asking (CommandRequest.RulesOnly).
	RulesOnly string
}

// DefaultMaxOutput is the size in bytes a tool's output is cut to by default.
const DefaultMaxOutput = 16 << 10

// readFile reads the file at abs in p as the editor has it: through a
// TextReader editor, else the open document or the disk (bounded by max).
func (e *Env) readFile(ctx context.Context, p *workspace.Project, abs string, max int64) ([]byte, error) {
	if r, ok := e.Editor.(TextReader); ok {
		text, ok, err := r.ReadText(ctx, abs)
		if err != nil {
			return nil, err
		}
		if ok {
			if int64(len(text)) > max {
				return nil, &workspace.FileTooLargeError{Path: p.Rel(abs), Size: int64(len(text)), Max: max}
			}
			return []byte(text), nil
		}
	}
	return e.Workspace.ReadFile(p, abs, max)
}

func (e *Env) maxOutput() int {
	if e.MaxOutput > 0 {
		return e.MaxOutput
	}
	return DefaultMaxOutput
}

// project returns the named project, or the current one when name is empty.
func (e *Env) project(name string) (*workspace.Project, error) {
	if name == "" {
		name = e.Project
	}
	p, ok := e.Workspace.Project(name)
	if !ok {
		return nil, fmt.Errorf("unknown project %q (projects: %s)", name, strings.Join(e.Workspace.Names(), ", "))
	}
	return p, nil
}

// Todo is one entry of the run's todo list.
type Todo struct {
	Content string `json:"content"`
	Status  string `json:"status"` // pending, in_progress, completed
}

// Result is what a tool returns to the model, plus effects on the run's state.
type Result struct {
	Content  string
	IsError  bool
	Summary  string  // a few words for progress, e.g. "read main.go"
	SwitchTo string  // switch_project: the new current project
	Todos    *[]Todo // todo_write: the new list
	Edits    []EditReport
	Denied   *Denial // the call was not allowed
	// CommandFilesChanged lists the projects whose build or test definitions
	// the call changed (or tried to): their commands ask from now on.
	CommandFilesChanged []string
	// Images are shown to the model with the result (read_image).
	Images []message.ImageData
}

// EditReport tells whether one file edit was applied.
type EditReport struct {
	Path    string
	Applied bool
}

func errorf(format string, args ...any) (Result, error) {
	msg := fmt.Sprintf(format, args...)
	return Result{Content: "error: " + msg, IsError: true, Summary: msg}, nil
}

// Tool is one tool the model can call.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
	Run         func(ctx context.Context, env *Env, args json.RawMessage) (Result, error)
	// External names the program that provides the tool (an MCP server);
	// "" for agent-lsp's own.
	External string
	// ReadOnly: an External tool whose server says it changes nothing (MCP's
	// readOnlyHint); plan and ask runs are offered it.
	ReadOnly bool

	schema *schemaInfo // Schema parsed, when the tool was made by All or External
}

// Set is a set of tools by name.
type Set map[string]Tool

// Specs lists the tools for the model, sorted by name.
func (s Set) Specs() []model.ToolSpec {
	out := make([]model.ToolSpec, 0, len(s))
	for _, t := range s {
		out = append(out, model.ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.Schema})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Without returns the set minus the named tools.
func (s Set) Without(names ...string) Set {
	out := Set{}
	for k, v := range s {
		out[k] = v
	}
	for _, n := range names {
		delete(out, n)
	}
	return out
}

// Bounds of what the model may send.
const (
	// MaxArgs bounds one tool call's arguments; bigger ones are cut where
	// they are stored (CutArgs) and the call fails with a clear error.
	MaxArgs = 256 << 10
	// MaxCallsPerTurn bounds the tool calls of one model turn that run; the
	// rest are answered with an error.
	MaxCallsPerTurn = 32
	// MaxSubagentLoops bounds a subagent's model turns.
	MaxSubagentLoops = 50
)

const cutArgsKey = `{"agent-lsp:cut":`

// CutArgs replaces arguments over MaxArgs by a short marker that Call
// recognizes, so they are neither stored nor sent to the model again.
func CutArgs(args string) string {
	if len(args) <= MaxArgs {
		return args
	}
	b, _ := json.Marshal(fmt.Sprintf("arguments of %d bytes, over the %d-byte limit", len(args), MaxArgs))
	return cutArgsKey + string(b) + "}"
}

// Call runs one tool call. Every failure (unknown tool, invalid JSON, arguments
// that do not fit the schema, a tool error or panic) becomes an error result the
// model can read; Call itself never fails.
func (s Set) Call(ctx context.Context, env *Env, call message.ToolCall) (res Result) {
	t, ok := s[call.Name]
	if !ok {
		if res, ok := unoffered(env, call.Name); ok {
			return res
		}
		names := make([]string, 0, len(s))
		for n := range s {
			names = append(names, n)
		}
		sort.Strings(names)
		res, _ = errorf("unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", "))
		return res
	}
	if strings.HasPrefix(call.Args, cutArgsKey) {
		var m map[string]string
		json.Unmarshal([]byte(call.Args), &m)
		res, _ = errorf("%s: %s were cut and not run; send smaller arguments (write a big file in parts: create it, then extend it with edit_file)",
			call.Name, m["agent-lsp:cut"])
		return res
	}
	args := json.RawMessage(call.Args)
	if strings.TrimSpace(call.Args) == "" {
		args = json.RawMessage("{}")
	}
	if !json.Valid(args) {
		res, _ = errorf("arguments of %s are not valid JSON: %s", call.Name, Clip(call.Args, 200))
		return res
	}
	if err := validate(t.schemaOf(), args); err != nil {
		res, _ = errorf("arguments of %s do not fit its schema: %v", call.Name, err)
		return res
	}
	defer func() {
		if v := recover(); v != nil {
			res, _ = errorf("tool %s crashed: %v", call.Name, v)
			res.Content += "\n" + Clip(string(debug.Stack()), 2000)
		}
	}()
	res, err := t.Run(ctx, env, args)
	if err != nil {
		res, _ = errorf("%s: %v", call.Name, err)
	}
	if len(res.Content) > env.maxOutput() {
		res.Content = Cut(res.Content, env.maxOutput())
	}
	return res
}

// Clip shortens s to at most n bytes, cut at a character boundary, marked
// with "…" when cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// minCut is the least Cut keeps, whatever max it is given.
const minCut = 256

// Cut shortens s to about max bytes (at least minCut), keeping its head and
// tail, with a note of the full size. It is safe for any max and any s.
func Cut(s string, limit int) string {
	limit = max(limit, minCut)
	if len(s) <= limit {
		return s
	}
	head := limit * 2 / 3
	tail := limit - head
	for head > 0 && !isRuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !isRuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s\n[... cut: %d of %d bytes shown ...]\n%s", s[:head], head+len(s)-start, len(s), s[start:])
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// schemaInfo is what validate reads of a tool's schema, parsed once when
// the tool is made (All, External): parsing it is most of a call's checking.
type schemaInfo struct {
	src        json.RawMessage   // the schema it was read from
	properties map[string]string // each argument's type
	required   []string
	err        error // the schema is not an object with properties
}

// parseSchema reads the subset of JSON Schema our tools use: an object with
// typed properties and required names.
func parseSchema(schema json.RawMessage) *schemaInfo {
	var sc struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	info := &schemaInfo{src: schema}
	if err := json.Unmarshal(schema, &sc); err != nil {
		info.err = fmt.Errorf("bad schema: %w", err)
		return info
	}
	info.properties = make(map[string]string, len(sc.Properties))
	for name, p := range sc.Properties {
		info.properties[name] = p.Type
	}
	info.required = sc.Required
	return info
}

// schemaOf returns t's parsed schema: the one parsed when t was made, unless
// its Schema was changed since.
func (t Tool) schemaOf() *schemaInfo {
	if t.schema != nil && bytes.Equal(t.schema.src, t.Schema) {
		return t.schema
	}
	return parseSchema(t.Schema)
}

// validate checks args against a tool's schema: an object with typed
// properties, required names, and no unknown names.
func validate(sc *schemaInfo, args json.RawMessage) error {
	if sc.err != nil {
		return sc.err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return fmt.Errorf("arguments must be a JSON object")
	}
	for _, r := range sc.required {
		if v, ok := obj[r]; !ok || string(v) == "null" {
			return fmt.Errorf("missing required argument %q", r)
		}
	}
	for k, v := range obj {
		typ, ok := sc.properties[k]
		if !ok {
			known := make([]string, 0, len(sc.properties))
			for n := range sc.properties {
				known = append(known, n)
			}
			sort.Strings(known)
			return fmt.Errorf("unknown argument %q (known: %s)", k, strings.Join(known, ", "))
		}
		if string(v) == "null" {
			continue
		}
		if got := jsonType(v); got != typ && !(typ == "number" && got == "integer") {
			return fmt.Errorf("argument %q must be %s, not %s", k, typ, got)
		}
	}
	return nil
}

func jsonType(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	switch {
	case s == "true" || s == "false":
		return "boolean"
	case strings.HasPrefix(s, `"`):
		return "string"
	case strings.HasPrefix(s, "["):
		return "array"
	case strings.HasPrefix(s, "{"):
		return "object"
	case strings.ContainsAny(s, ".eE"):
		return "number"
	default:
		return "integer"
	}
}
