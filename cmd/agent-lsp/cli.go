package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/config"
)

// The command line of `agent-lsp run`: its flags, its usage, and what a bad
// invocation says.

const runUsage = `Usage: agent-lsp run [flags] [PROMPT | -]

Runs the agent headless on one or more workspace folders and applies its edits
to the files on disk. The prompt is the argument, or standard input when it is
"-" or absent (with --continue or --resume: only when it is "-"):

  agent-lsp run "fix the failing test"
  git diff | agent-lsp run - --json
  agent-lsp run --continue "now add a test"   # the newest session of this workspace
  agent-lsp run --resume s-01J...             # finish an interrupted session
  agent-lsp run --fork s-01J...@2 "try it another way"   # a new session from before prompt 2
  agent-lsp run --json --fail-on-denied --diff -o reply.md "review this change"
  agent-lsp run --output-schema verdict.json -o verdict.json "is this PR safe?"
  agent-lsp run --image shot.png "why is the button cut off?"

Without --json the transcript goes to stderr and only the final reply to
stdout. With --json, stdout has one agent/event object per line and always
ends with one {"type":"result","schemaVersion":1,...} line
(docs/result.schema.json).

Exit status:
  0    done (also a prompt queued into a running session: status "queued")
  1    failed (also: an answer not valid against --output-schema, twice)
  2    usage or configuration error: a bad flag, an unknown project or
       session, no API key for an endpoint that needs one, a store that
       cannot be reached or opened, a store file found damaged (salvaged:
       run again)
  3    stopped by a limit (the result's "limit" says which; --resume goes on)
  4    done, but a call the task needed was denied (only with --fail-on-denied)
  130  cancelled (SIGINT/SIGTERM cancel the run cleanly; --resume completes it)

The API key is read from OPENAI_API_KEY; OpenAI's endpoint (the default)
needs one, a local server (--base-url http://localhost:11434/v1 for Ollama)
usually does not.

Commands other than the project's build and test need an --allow rule; rules
match each command of the parsed line ("go test *" allows "go test ./..." and
not "go test ./... ; touch x"), and --deny wins. Edits of protected files
(.git/, .vscode/, .env*, CI workflows, AGENTS.md, ...) need --allow-edit.
See docs/security.md and docs/ci.md.

Flags:
`

type runFlags struct {
	workspaces       multiFlag
	images           multiFlag // --image: image files attached to the prompt
	project, session string
	resume           string
	continueLast     bool // --continue: the newest session of the workspace
	json             bool
	verbose          bool
	noDaemon         bool
	ephemeral        bool   // in-process, a memory store: nothing stored, no daemon
	diff             bool   // the unified diff of the run's changes at the end
	failOnDenied     bool   // exit 4 when a call was denied
	output           string // -o: where the final answer goes
	schemaPath       string // --output-schema
	schema           *outputSchema
	settings         *config.Flags // model, endpoint, store, limits, permissions
	mode             string        // the run's mode (--mode, else the setting's): sent with the run, so it wins over the session's
	fork             string        // --fork ID@N: the prompt runs in a new session forked from checkpoint N of ID
	isolation        string        // --isolation worktree: the run works in a git worktree on a branch of its own
}

// runCommand is `agent-lsp run`: it parses the flags and the prompt, runs
// the agent (headless) and returns the exit code.
func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runFlags
	fs := newFlags("agent-lsp run", runUsage, "", stdout, stderr)
	fs.Var(&f.workspaces, "workspace", "workspace folder (repeatable; default: the current directory)")
	fs.StringVar(&f.project, "project", "", "project (folder name) to work in; default: the first")
	fs.Var(&f.images, "image", "attach an image file (PNG, JPEG, GIF, WebP) to the prompt (repeatable); the model must take images (--vision)")
	fs.StringVar(&f.session, "session", "", "continue this session with a new prompt")
	fs.StringVar(&f.resume, "resume", "", "resume this interrupted session (no prompt)")
	fs.StringVar(&f.fork, "fork", "", "SESSION@N: run the prompt in a new session whose history is SESSION's before its prompt N (files untouched; agent-lsp sessions checkpoints lists them)")
	fs.BoolVar(&f.continueLast, "continue", false, "continue the newest session of this workspace: with a prompt, a new turn; without, resume it when it was interrupted")
	fs.BoolVar(&f.json, "json", false, "print agent/event lines and a result line as JSON on stdout")
	fs.StringVar(&f.output, "output", "", "write the final answer (the structured output with --output-schema) to this file, atomically, when the run is done")
	fs.StringVar(&f.output, "o", "", "short for --output")
	fs.StringVar(&f.schemaPath, "output-schema", "", "a JSON Schema file the final answer must be valid against (sent as response_format where the endpoint takes it)")
	fs.BoolVar(&f.ephemeral, "ephemeral", false, "run in this process with a memory store: nothing is stored, the store and the daemon are untouched")
	fs.BoolVar(&f.diff, "diff", false, "print the unified diff of the run's file changes at the end (stderr; in the result line with --json)")
	fs.BoolVar(&f.failOnDenied, "fail-on-denied", false, "exit 4 when the run is done but a call it made was denied")
	fs.BoolVar(&f.verbose, "verbose", false, "also print the server's info and log lines on stderr (its errors and warnings always are)")
	fs.StringVar(&f.isolation, "isolation", "", "worktree: work in a git worktree of the project's HEAD on a new branch agent-lsp/..., committed at the end (the result names the branch); the project's uncommitted changes are not in it")
	fs.BoolVar(&f.noDaemon, "no-daemon", false, "run in-process even when a daemon owns the store (also AGENT_LSP_DAEMON=off)")
	f.settings = config.Register(fs)
	usageErr := func(format string, a ...any) int {
		cl := &client{json: f.json, out: bufio.NewWriter(stdout), errw: stderr}
		res := failed(fmt.Errorf(format, a...), true)
		res.hint = "Run 'agent-lsp run --help' for usage."
		cl.printResult(res, stdout)
		return res.exitCode()
	}
	switch err := parseQuiet(fs, args); {
	case err == flag.ErrHelp:
		fs.Usage()
		return 0
	case err != nil:
		return usageErr("%v", err)
	}
	prompt, code := f.check(fs, stdin, usageErr)
	if code >= 0 {
		return code
	}
	model, res, ok := preflight(&f, prompt)
	if !ok {
		(&client{json: f.json, out: bufio.NewWriter(stdout), errw: stderr}).printResult(res, stdout)
		return res.exitCode()
	}
	return headless(f, prompt, model, stdout, stderr)
}

// preflight refuses at once, before a server starts, a run that settings
// cannot serve: settings that do not resolve, no API key for an endpoint
// that needs one (as the server would, without a request; a built-in slash
// command needs none).
func preflight(f *runFlags, prompt string) (model string, res resultLine, ok bool) {
	st, _, err := config.Resolve(os.Getenv, nil, f.settings)
	if err != nil {
		return "", failed(err, true), false
	}
	f.mode = st.Mode
	if _, priced := st.Prices[st.Model]; st.MaxCost > 0 && !priced {
		return "", failed(fmt.Errorf("--max-cost needs the price of the model %s: give it with --prices %s=INPUT/OUTPUT (USD per million tokens)", st.Model, st.Model), true), false
	}
	if server.NeedsKey(st.BaseURL, st.APIKey) && server.Builtin(prompt) == "" {
		d := server.ReasonDataOf(st, agent.ReasonNoAPIKey, "model.apiKeyEnv")
		res := failed(errors.New(reasonWords(d)), true)
		res.Reason = d.Reason
		return "", res, false
	}
	return st.Model, resultLine{}, true
}

// count is how many of conds hold.
func count(conds ...bool) int {
	n := 0
	for _, c := range conds {
		if c {
			n++
		}
	}
	return n
}

// check checks the flags and reads the prompt; code is -1 when the run
// can start, else the exit code (usageErr has said why).
func (f *runFlags) check(fs *flag.FlagSet, stdin io.Reader, usageErr func(string, ...any) int) (prompt string, code int) {
	if n := count(f.resume != "", f.session != "", f.continueLast, f.fork != ""); n > 1 {
		return "", usageErr("--resume, --session, --continue and --fork exclude each other")
	}
	if f.fork != "" {
		if _, _, err := parseFork(f.fork); err != nil {
			return "", usageErr("%v", err)
		}
	}
	if f.ephemeral && (f.resume != "" || f.session != "" || f.continueLast) {
		return "", usageErr("--ephemeral stores nothing, so it continues no session: drop --resume, --session or --continue")
	}
	if fs.NArg() > 1 {
		return "", usageErr("one prompt only; quote it (got %d arguments)", fs.NArg())
	}
	if f.schemaPath != "" {
		s, err := loadSchema(f.schemaPath)
		if err != nil {
			return "", usageErr("%v", err)
		}
		f.schema = s
	}
	prompt = fs.Arg(0)
	optional := f.resume != "" || f.continueLast // no prompt: resume
	if prompt == "-" || (prompt == "" && !optional) {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", usageErr("read prompt from stdin: %v", err)
		}
		prompt = string(b)
		if strings.TrimSpace(prompt) == "" {
			return "", usageErr("no prompt: give one as an argument or on standard input")
		}
	}
	if f.resume != "" && prompt != "" {
		return "", usageErr("--resume takes no prompt: continue the session with --session %s PROMPT", f.resume)
	}
	if len(f.images) > 0 && prompt == "" {
		return "", usageErr("--image attaches to a prompt; --resume has none")
	}
	for i, img := range f.images {
		abs, err := filepath.Abs(img)
		if err != nil {
			return "", usageErr("--image %s: %v", img, err)
		}
		f.images[i] = abs
	}
	if len(f.workspaces) == 0 {
		wd, _ := os.Getwd()
		f.workspaces = multiFlag{wd}
	}
	for i, w := range f.workspaces {
		abs, err := filepath.Abs(w)
		if err != nil {
			return "", usageErr("%v", err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return "", usageErr("--workspace %s: not a folder", w)
		}
		f.workspaces[i] = abs
	}
	return prompt, -1
}
