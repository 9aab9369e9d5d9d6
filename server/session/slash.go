package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/custom"
	"github.com/agent-lsp/agent-lsp/agent/model"
	"github.com/agent-lsp/agent-lsp/agent/tools"
)

// Slash commands: a prompt that starts with /name. Built-ins are answered
// by agent-lsp without a model call; the others come from files
// (agent/custom) and expand into the prompt the model sees. LSP's
// agent.run and ACP's session/prompt both go through Backend.ExpandSlash,
// and agent.commands and ACP's available_commands_update both list
// Backend.Commands.

// builtin is a slash command agent-lsp answers itself.
type builtin struct {
	name, description, hint string
}

// slashInput is what a built-in knows of the prompt that called it.
type slashInput struct {
	b       *Backend
	project string
	session string // "" for a new session
	args    string
	// model is the model the session runs on now; setModel makes the
	// session's next prompts run on another (nil: it cannot).
	model    string
	setModel func(ctx context.Context, name string) error
	// noKey says why the endpoint is not asked ("" when it may be): it
	// needs an API key and none is set.
	noKey string
}

// models lists the endpoint's models, without a request when it needs a
// key there is none of.
func (in slashInput) models(ctx context.Context) ([]model.ModelInfo, error) {
	if in.noKey != "" {
		return nil, errors.New(in.noKey)
	}
	return in.b.Models(ctx)
}

// builtins are the built-in slash commands, in the order /help lists them;
// builtinRun answers each.
var (
	builtins = []builtin{
		{"help", "List the slash commands, or describe one", "[command]"},
		{"model", "Show the session's model and the endpoint's models, or switch the session to another", "[model]"},
		{"sessions", "List the project's stored sessions, newest first", ""},
	}
	builtinRun = map[string]func(ctx context.Context, in slashInput) (string, error){
		"help": helpBuiltin, "model": modelBuiltin, "sessions": sessionsBuiltin,
	}
)

// Builtin is the built-in slash command prompt calls ("" for none): one
// agent-lsp answers itself, without the model.
func Builtin(prompt string) string {
	name, _, ok := custom.Parse(prompt)
	if _, builtin := builtinRun[name]; ok && builtin {
		return name
	}
	return ""
}

// CommandInfo is one slash command as agent.commands lists it.
type CommandInfo struct {
	Name         string `json:"name"` // without the slash
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint,omitempty"`
	Source       string `json:"source"`          // builtin, user or project
	Path         string `json:"path,omitempty"`  // its file: relative to the project's root, or absolute for the user's
	Error        string `json:"error,omitempty"` // why the file cannot be used
}

// listCommands is every slash command of project: the built-ins, then the
// user's files, then the project's (a name is its first definition's: a
// file never replaces a built-in, and the user's own wins over the
// repository's).
func listCommands(b *Backend, project string) ([]CommandInfo, []custom.Command, error) {
	files, err := b.Runtime.Commands(project)
	if err != nil {
		return nil, nil, err
	}
	out := make([]CommandInfo, 0, len(builtins)+len(files))
	for _, bi := range builtins {
		out = append(out, CommandInfo{Name: bi.name, Description: bi.description, ArgumentHint: bi.hint, Source: string(custom.Builtin)})
	}
	var kept []custom.Command
	for _, c := range files {
		info := CommandInfo{Name: c.Name, Description: c.Description, ArgumentHint: c.ArgumentHint, Source: string(c.Source), Path: c.Path}
		if c.Err != nil {
			info.Error = c.Err.Error()
		}
		if slices.ContainsFunc(builtins, func(bi builtin) bool { return bi.name == c.Name }) {
			info.Error = fmt.Sprintf("not used: /%s is built in", c.Name) // listed, so that the user sees why
		} else {
			kept = append(kept, c)
		}
		out = append(out, info)
	}
	return out, kept, nil
}

// SlashInput is what a front end knows of a prompt that starts with /name.
type SlashInput struct {
	Project string
	Session string // "" for a session the store does not have yet
	Model   string // the model the session runs on now
	// SetModel makes the session's next prompts run on another model (nil:
	// it cannot, the session is not stored yet).
	SetModel func(ctx context.Context, name string) error
	// NeedsKey: the front end knows that the endpoint needs an API key
	// the settings lack (one that refused a request without one); an
	// endpoint that always needs one (NeedsKey) is known here.
	NeedsKey bool
}

// SlashResult is what a slash command makes of a prompt: a built-in's
// Reply, or a file command's Prompt and how its run differs.
type SlashResult struct {
	Builtin bool
	Reply   string
	Prompt  string
	Model   string   // the command's model ("" keeps the run's)
	Review  bool     // edits need the user's confirmation (mode: review)
	Tools   []string // the run's tools (names or groups); nil: all
}

// ExpandSlash expands a prompt that starts with /name in in.Project; ok is
// false for any other prompt. An unknown name is an error naming the
// closest commands; a file command that cannot run (a broken file, an
// @path outside the project) an error saying why. SlashError tells the
// caller's errors from the others.
func (b *Backend) ExpandSlash(ctx context.Context, in SlashInput, prompt string) (res SlashResult, ok bool, err error) {
	si := slashInput{b: b, project: in.Project, session: in.Session, model: in.Model, setModel: in.SetModel}
	if in.NeedsKey || NeedsKey(b.Settings.BaseURL, b.Settings.APIKey) {
		si.noKey = noKeyWords(b.Settings)
	}
	return expandSlash(ctx, si, prompt)
}

// Commands are the slash commands of project, built-ins first.
func (b *Backend) Commands(project string) ([]CommandInfo, error) {
	list, _, err := listCommands(b, project)
	return list, err
}

// errUnknownSlash is a prompt naming a slash command there is none of.
var errUnknownSlash = errors.New("unknown slash command")

// expandSlash is ExpandSlash of in.
func expandSlash(ctx context.Context, in slashInput, prompt string) (res SlashResult, ok bool, err error) {
	name, args, ok := custom.Parse(prompt)
	if !ok {
		return SlashResult{}, false, nil
	}
	in.args = args
	if run, ok := builtinRun[name]; ok {
		reply, err := run(ctx, in)
		return SlashResult{Builtin: true, Reply: reply}, true, err
	}
	list, files, err := listCommands(in.b, in.project)
	if err != nil {
		return SlashResult{}, true, err
	}
	i := slices.IndexFunc(files, func(c custom.Command) bool { return c.Name == name })
	if i < 0 {
		return SlashResult{}, true, unknownSlash(name, list)
	}
	c := files[i]
	text, err := in.b.Runtime.ExpandCommand(in.project, c, args)
	if err != nil {
		return SlashResult{}, true, err
	}
	res = SlashResult{Prompt: text, Tools: c.AllowedTools}
	if c.Model != "" {
		if c.Source == custom.User || in.b.Runtime.ModelAllowed(c.Model) {
			res.Model = c.Model
		} else {
			in.b.Warn(fmt.Sprintf("/%s (%s) asks for the model %s, which the subagents.models setting does not allow for a repository's command: it runs on the session's model", c.Name, c.Path, c.Model))
		}
	}
	switch strings.ToLower(c.Mode) {
	case "review":
		res.Review = true
	case "ask", "plan":
		spec := res.Tools
		if spec == nil {
			spec = []string{"read"}
		}
		res.Tools, _ = custom.SelectTools(spec, tools.ReadOnlyTools)
		if res.Tools == nil {
			res.Tools = []string{}
		}
	}
	return res, true, nil
}

// unknownSlash is the error for /name when no command has that name.
func unknownSlash(name string, list []CommandInfo) error {
	names := make([]string, len(list))
	for i, c := range list {
		names[i] = c.Name
	}
	guess := ""
	if close := custom.Suggest(name, names); len(close) > 0 {
		guess = " (did you mean /" + strings.Join(close, ", /") + "?)"
	}
	return fmt.Errorf("%w /%s%s; the commands are /%s", errUnknownSlash, name, guess, strings.Join(names, ", /"))
}

// SlashError tells whether err of ExpandSlash is the caller's (an unknown
// or broken command, a reference outside the project, an unknown project,
// a model the endpoint does not offer).
func SlashError(err error) bool {
	return errors.Is(err, errUnknownSlash) || errors.Is(err, agent.ErrBadCommand) || errors.Is(err, agent.ErrUnknownProject) ||
		errors.Is(err, agent.ErrNoProject) || errors.Is(err, errBadModel)
}

func helpBuiltin(ctx context.Context, in slashInput) (string, error) {
	list, _, err := listCommands(in.b, in.project)
	if err != nil {
		return "", err
	}
	if in.args != "" {
		name := strings.TrimPrefix(strings.Fields(in.args)[0], "/")
		i := slices.IndexFunc(list, func(c CommandInfo) bool { return c.Name == name })
		if i < 0 {
			return "", unknownSlash(name, list)
		}
		c := list[i]
		var b strings.Builder
		fmt.Fprintf(&b, "/%s", c.Name)
		if c.ArgumentHint != "" {
			fmt.Fprintf(&b, " %s", c.ArgumentHint)
		}
		fmt.Fprintf(&b, "\n%s\nsource: %s", c.Description, c.Source)
		if c.Path != "" {
			fmt.Fprintf(&b, " (%s)", c.Path)
		}
		if c.Error != "" {
			fmt.Fprintf(&b, "\nerror: %s", c.Error)
		}
		return b.String(), nil
	}
	var b strings.Builder
	b.WriteString("Slash commands (type /name and what it needs):\n")
	for _, c := range list {
		line := "/" + c.Name
		if c.ArgumentHint != "" {
			line += " " + c.ArgumentHint
		}
		fmt.Fprintf(&b, "- %s: %s (%s)", line, c.Description, c.Source)
		if c.Error != "" {
			fmt.Fprintf(&b, " [cannot run: %s]", c.Error)
		}
		b.WriteString("\n")
	}
	b.WriteString("Commands come from .agents/commands, .claude/commands and .github/prompts in the project and from your commands folder; docs/customization.md says how to write one.")
	return b.String(), nil
}

// errBadModel is a model the endpoint does not offer.
var errBadModel = errors.New("model not offered")

func modelBuiltin(ctx context.Context, in slashInput) (string, error) {
	list, listErr := in.models(ctx)
	if in.args == "" {
		var b strings.Builder
		fmt.Fprintf(&b, "Model: %s\nEndpoint: %s", in.model, in.b.Settings.BaseURL)
		switch {
		case listErr == nil && len(list) > 0:
			ids := make([]string, len(list))
			for i, m := range list {
				ids[i] = m.ID
			}
			fmt.Fprintf(&b, "\nOffered: %s", strings.Join(ids, ", "))
		case listErr != nil:
			fmt.Fprintf(&b, "\n(The endpoint's models could not be listed: %v)", listErr)
		}
		b.WriteString("\n/model NAME switches this session to another.")
		return b.String(), nil
	}
	name := strings.Fields(in.args)[0]
	if listErr == nil && !model.Offers(list, name) {
		ids := make([]string, len(list))
		for i, m := range list {
			ids[i] = m.ID
		}
		return "", fmt.Errorf("%w: the endpoint %s does not offer the model %q; it offers: %s", errBadModel, in.b.Settings.BaseURL, name, strings.Join(ids, ", "))
	}
	if in.setModel == nil {
		return "", fmt.Errorf("%w: this prompt starts no session yet: send a first prompt, then /model %s; or choose the model in the editor (agent.run's model)", errBadModel, name)
	}
	if err := in.setModel(ctx, name); err != nil {
		return "", err
	}
	return fmt.Sprintf("This session's next prompts run on %s.", name), nil
}

func sessionsBuiltin(ctx context.Context, in slashInput) (string, error) {
	list, err := in.b.Store.Sessions(ctx, in.project)
	if err != nil {
		return "", fmt.Errorf("list sessions: %w", err)
	}
	if len(list) == 0 {
		return fmt.Sprintf("No stored sessions in project %s.", in.project), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Sessions of project %s, newest first:\n", in.project)
	for i, s := range list {
		if i == 20 {
			fmt.Fprintf(&b, "(and %d older)\n", len(list)-i)
			break
		}
		fmt.Fprintf(&b, "- %s %s (%s, %s, %d messages)\n", s.ID, s.Title, in.b.Status(s), s.Updated.Local().Format(time.DateTime), s.Messages)
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// SetStoredModel switches stored session, which must not be running, to
// another model for its next runs.
func (b *Backend) SetStoredModel(ctx context.Context, session, name string) error {
	if b.Live().Running(session) {
		return fmt.Errorf("%w: session %s is running: switch its model once the run ends", agent.ErrSessionBusy, session)
	}
	sess, err := b.Store.Session(ctx, session)
	if err != nil {
		return fmt.Errorf("%w %q", agent.ErrUnknownSession, session)
	}
	sess.Model = name
	return b.Store.PutSession(ctx, sess)
}

// modelsTimeout bounds asking the endpoint for its models.
const modelsTimeout = 10 * time.Second

// Models lists the endpoint's models (an empty list, never nil, when it
// answers none).
func (b *Backend) Models(ctx context.Context) ([]model.ModelInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	list, err := b.Model.Models(ctx)
	if list == nil && err == nil {
		list = []model.ModelInfo{}
	}
	return list, err
}
