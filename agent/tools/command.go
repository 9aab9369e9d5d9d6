package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agent-lsp/agent-lsp/agent/sandbox"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// DefaultScrubEnv are the patterns of environment variables commands never
// get: credentials, and sockets that lead out of the project (an SSH agent,
// the editor, a Docker daemon), and the terminal gpg's agent would prompt on
// (GPG_TTY: the editor's). A pattern's * matches any text.
var DefaultScrubEnv = []string{"*_TOKEN", "*_SECRET", "*_SECRET_KEY", "*_PASSWORD", "*_API_KEY", "*_ACCESS_KEY",
	"AWS_*", "PGPASSWORD", "DATABASE_URL", "SSH_AUTH_SOCK", "NVIM", "NVIM_LISTEN_ADDRESS", "VSCODE_IPC_HOOK*", "DOCKER_HOST", "GPG_TTY"}

// ScrubEnv returns environ without the variables keyVars name (the API key's)
// and those matching any of patterns, and without the store setting
// AGENT_LSP_STORE when it holds a URL (it may carry credentials).
func ScrubEnv(environ []string, keyVars, patterns []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		drop := slices.Contains(keyVars, name) || (name == "AGENT_LSP_STORE" && strings.Contains(value, "://"))
		for _, p := range patterns {
			drop = drop || globMatch(p, name)
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}

// globMatch matches s against a pattern whose only special character is *.
func globMatch(pattern, s string) bool {
	head, rest, star := strings.Cut(pattern, "*")
	if !star {
		return pattern == s
	}
	if !strings.HasPrefix(s, head) {
		return false
	}
	for i := len(head); i <= len(s); i++ {
		if globMatch(rest, s[i:]) {
			return true
		}
	}
	return false
}

func (e *Env) commandEnv() []string {
	if e.CommandEnv != nil {
		return e.CommandEnv
	}
	return ScrubEnv(os.Environ(), []string{"OPENAI_API_KEY"}, DefaultScrubEnv)
}

var runCommand = Tool{
	Name: "run_command",
	Description: "Run a shell command in the project root and return its exit status and output. " +
		"Use \"build\" or \"test\" to run the project's own build or test command (recorded as the project's build/test status; it runs without asking in the sandbox unless you changed the files that define it). " +
		"Other commands need the user's permission and may be denied. " +
		"background: true starts it (a dev server, a watcher) and returns its ID at once; see process_output, process_stop; it ends with the run. Commands run in a sandbox: they write only in the project, the temporary directory and build caches, and reach no network unless the user allowed it; " +
		"git metadata (.git) and protected files (.vscode/, .env, AGENTS.md, ...) are read-only to commands (git add, commit and config fail: the user runs them), and protected files a command creates are removed. Commands do not get API keys, tokens or passwords from the environment.",
	Schema: json.RawMessage(`{"type": "object", "properties": {
		"command": {"type": "string", "description": "\"build\", \"test\", or a shell command line."},
		"timeout_seconds": {"type": "integer", "description": "Give up after this many seconds (default 120, at most 600)."},
		"background": {"type": "boolean", "description": "Run it in the background (no timeout)."},
		` + projectArg + `}, "required": ["command"]}`),
	Run: func(ctx context.Context, env *Env, args json.RawMessage) (Result, error) {
		var a struct {
			Command, Project string
			Timeout          int `json:"timeout_seconds"`
			Background       bool
		}
		if err := decode(args, &a); err != nil {
			return Result{}, err
		}
		p, err := env.project(a.Project)
		if err != nil {
			return errorf("%v", err)
		}
		kind, line := projectCommand(p, strings.TrimSpace(a.Command))
		if line == "" {
			return errorf("project %s has no %s command", p.Name(), a.Command)
		}
		policy := env.SandboxSettings.Policy(p.Name(), string(p.Info().Type), p.Root())
		confined := env.Sandbox != nil && env.Sandbox.Confines(policy)
		var inspection sandbox.Inspection
		if confined {
			inspection = env.Sandbox.Inspect(policy)
		}
		if a.Background {
			return startBackground(ctx, env, p, kind, line, policy, confined, inspection)
		}
		if res, ok := env.allow(ctx, p, kind, line, confined, inspection, ""); !ok {
			return res, nil
		}
		timeout := commandTimeout(a.Timeout, env.CommandTimeout)
		var launch launcher
		var run *sandbox.Run
		if env.Sandbox != nil && env.Sandbox.Holds(policy) { // confined, or (Windows) held in a Job Object
			launch = func(ctx context.Context, argv []string) *exec.Cmd {
				cmd, r := env.Sandbox.Command(ctx, policy, argv)
				run = r
				return cmd
			}
		}
		record := func(o workspace.Outcome) {
			switch kind {
			case "build":
				p.SetBuild(o)
			case "test":
				p.SetTest(o)
			}
		}
		record(workspace.Outcome{Status: workspace.StatusPending, Command: line})
		unsaved := saveForCommand(ctx, env, p) // the command must see the agent's edits
		shown := Clip(line, 200)               // the model wrote it; the output matters more
		if err := env.intend(ctx, Intent{Command: line}); err != nil {
			record(workspace.Outcome{Status: workspace.StatusFailed, Command: line, Summary: "not run"})
			return errNotRecorded(fmt.Sprintf("running %q", line), err), nil
		}
		out, total, code, err := execute(ctx, p.Root(), []string{"sh", "-c", line}, timeout, env.commandEnv(), env.maxOutput()-len(shown)-512, env.Output, launch)
		var note string
		if run != nil {
			note = outcomeNote(run.Finish())
		}
		if inspection.Truncated {
			note += "\n[the project is too big for the sandbox to look for every nested repository and protected path: those past its bounds were writable]"
		}
		status, header := outcome(code, err, timeout)
		if run != nil && confined { // (a Job Object alone refuses no path)
			// A refusal is worth telling even when the command went on.
			if refused := refusedPaths(out, p.Root(), run.ReadOnly()); len(refused) > 0 {
				note += readOnlyNote(refused, p.Root())
			} else if status == workspace.StatusFailed && blocked(out, policy.Network) {
				note += blockedNote(policy)
			}
		}
		record(workspace.Outcome{Status: status, Command: line, Summary: header + lastLine(out)})
		if status == workspace.StatusFailed {
			p.AddError(fmt.Sprintf("%s: %s%s", line, header, lastLine(out)))
		}
		size := ""
		if total > int64(len(out)) {
			size = fmt.Sprintf(" (%d bytes of output; the middle is left out)", total)
		}
		// The outcome comes first: when the result is cut again to fit the
		// model's context, its head stays.
		content := fmt.Sprintf("%s%s%s\n$ %s\n%s%s", unsaved, header, size, shown, out, note)
		return Result{Content: content, IsError: status == workspace.StatusFailed, Summary: line + ": " + header}, nil
	},
}

// projectCommand resolves "build" and "test" (or the detected command line
// itself) to the project's own command and says which it is.
func projectCommand(p *workspace.Project, line string) (kind, resolved string) {
	stack := p.Info().TechStack
	switch {
	case line == "build" || (line == stack.BuildCommand && line != ""):
		return "build", stack.BuildCommand
	case line == "test" || (line == stack.TestCommand && line != ""):
		return "test", stack.TestCommand
	}
	return "", line
}

// allow asks the permission port. The project's own build and test run
// without asking only in the sandbox, and only while the agent has not
// changed the files that define them in this session. A protected file
// with another link (which the sandbox cannot keep a command from writing
// through) makes every command of the project ask. bg is the isolation of
// a background process ("" for a command run to its end): one without
// namespaces always asks.
func (e *Env) allow(ctx context.Context, p *workspace.Project, kind, line string, confined bool, in sandbox.Inspection, bg sandbox.Isolation) (Result, bool) {
	req := CommandRequest{Session: e.Session, Project: p.Name(), Command: line, Trusted: kind != "", Background: bg != ""}
	switch {
	case len(in.HardLinks) > 0:
		req.Trusted, req.AlwaysAsk = false, true
		req.Note = fmt.Sprintf("%s has another link (%d such file(s)), through which a sandboxed command could change it, so every command of %s asks until it has one link: remove the other link.",
			Clip(strings.Join(in.HardLinks, ", "), 300), len(in.HardLinks), p.Name())
	case bg != "" && bg != sandbox.Namespaces:
		req.Trusted, req.AlwaysAsk = false, true
		req.Note = fmt.Sprintf("Commands are not confined to namespaces here (%s), so a background process could outlive its run: starting one always asks.", bg)
	case !req.Trusted:
	case e.Trust != nil && e.Trust.Changed(p.Name()):
		req.Trusted = false
		req.Note = fmt.Sprintf("The agent changed a file that defines the %s commands of %s in this session, so its %s asks.", p.Name(), p.Name(), kind)
	case !confined:
		req.Trusted = false
		req.Note = fmt.Sprintf("Commands are not sandboxed here, so the project's own %s asks too.", kind)
	}
	if e.Permissions == nil {
		res, _ := errorf("running %q needs permission and nobody can grant it here", line)
		return res, false
	}
	perm, err := e.Permissions.AllowCommand(ctx, req)
	if err != nil {
		res, _ := errorf("asking permission for %q: %v", line, err)
		return res, false
	}
	if !perm.Allowed {
		return Result{Content: fmt.Sprintf("error: running %q was not allowed: %s", line, perm.Reason), IsError: true, Summary: "not allowed: " + line,
			Denied: &Denial{What: line, Hint: perm.Hint}}, false
	}
	return Result{}, true
}

// outcome classifies how a command ended.
func outcome(code int, err error, timeout time.Duration) (workspace.Status, string) {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return workspace.StatusFailed, fmt.Sprintf("timed out after %s", timeout)
	case err != nil:
		return workspace.StatusFailed, "could not run: " + err.Error()
	case code != 0:
		return workspace.StatusFailed, fmt.Sprintf("exit status %d", code)
	}
	return workspace.StatusSuccess, "exit status 0"
}

// blocked reports whether a failed command's output shows an access the
// sandbox refuses: a permission error on a path, or (network off) a
// connection or name lookup that failed.
func blocked(out string, network bool) bool {
	marks := []string{"Permission denied", "Operation not permitted", "EACCES", "EPERM", "Read-only file system"}
	if !network {
		marks = append(marks, "Connection refused", "Network is unreachable", "ECONNREFUSED", "ENETUNREACH",
			"Temporary failure in name resolution", "Could not resolve host", "Name or service not known", "EAI_AGAIN")
	}
	for _, s := range marks {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

// blockedNote tells the model what the sandbox refuses and how the user can
// allow it.
func blockedNote(p sandbox.Policy) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n[blocked by the sandbox (%s): commands may write only in %s", p.Mode, strings.Join(p.WritableDirs(), ", "))
	if !p.Network {
		b.WriteString(", and reach no network (only servers the command itself starts)")
	}
	b.WriteString(". Do not retry the same way: write inside the project, or ask the user to allow it (the sandbox.writable and sandbox.network settings, or sandbox off).]")
	return b.String()
}

func lastLine(out string) string {
	out = strings.TrimSpace(out)
	if i := strings.LastIndexByte(out, '\n'); i >= 0 {
		out = out[i+1:]
	}
	if out == "" {
		return ""
	}
	return ": " + Clip(out, 200)
}

// boundedOutput is an io.Writer that keeps the head and the tail of what is
// written and counts all of it. What lies between is dropped as it streams,
// so a command printing 400 MB costs no more memory than one printing the
// few KiB the model is shown. The zero value keeps nothing; use newOutput.
type boundedOutput struct {
	headMax, tailMax int // set once by newOutput

	mu    sync.Mutex // guards the fields below: stdout and stderr may be written at once
	head  []byte
	tail  []byte // up to 2*tailMax, trimmed to the last tailMax
	total int64
}

// newOutput returns a boundedOutput whose String is about keep bytes at most
// (and at least minCut), two thirds head, one third tail, plus a note.
func newOutput(keep int) *boundedOutput {
	keep = max(keep, minCut)
	return &boundedOutput{headMax: keep * 2 / 3, tailMax: keep - keep*2/3}
}

func (b *boundedOutput) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n0 := len(p)
	b.total += int64(n0)
	if room := b.headMax - len(b.head); room > 0 {
		n := min(room, len(p))
		b.head = append(b.head, p[:n]...)
		p = p[n:]
	}
	if len(p) >= b.tailMax {
		b.tail = append(b.tail[:0], p[len(p)-b.tailMax:]...)
		return n0, nil
	}
	b.tail = append(b.tail, p...)
	if len(b.tail) > 2*b.tailMax {
		b.tail = append(b.tail[:0], b.tail[len(b.tail)-b.tailMax:]...)
	}
	return n0, nil
}

// String returns the output, with a note of what was dropped from its middle
// and the full size. The cut falls on UTF-8 character boundaries.
func (b *boundedOutput) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	head, tail := b.head, b.tail
	if len(tail) > b.tailMax {
		tail = tail[len(tail)-b.tailMax:]
	}
	if b.total <= int64(len(head)+len(tail)) {
		return string(head) + string(tail)
	}
	for i := len(head) - 1; i >= 0 && i >= len(head)-utf8.UTFMax; i-- {
		if isRuneStart(head[i]) {
			if !utf8.FullRune(head[i:]) {
				head = head[:i] // a character the cut split
			}
			break
		}
	}
	for len(tail) > 0 && !isRuneStart(tail[0]) {
		tail = tail[1:]
	}
	dropped := b.total - int64(len(head)) - int64(len(tail))
	return fmt.Sprintf("%s\n[... %d of %d bytes of output dropped ...]\n%s", head, dropped, b.total, tail)
}

// Timeouts a command may ask for.
const (
	minCommandTimeout = time.Second
	maxCommandTimeout = 10 * time.Minute
)

// commandTimeout is the timeout of a command that asked for requested
// seconds (0: the default def, else two minutes), within 1 s and 10 min.
func commandTimeout(requested int, def time.Duration) time.Duration {
	t := def
	if requested > 0 {
		t = time.Duration(min(requested, int(maxCommandTimeout/time.Second))) * time.Second
	}
	if t <= 0 {
		t = 2 * time.Minute
	}
	return min(max(t, minCommandTimeout), maxCommandTimeout)
}

// lookPath finds a program in the PATH of env, the environment the command
// runs with (a daemon serves connections with other environments than its
// own, which is empty); else as exec does, in this process's PATH.
func lookPath(name string, env []string) string {
	if strings.ContainsRune(name, '/') {
		return name
	}
	for i := len(env) - 1; i >= 0; i-- {
		path, ok := strings.CutPrefix(env[i], "PATH=")
		if !ok {
			continue
		}
		for _, dir := range filepath.SplitList(path) {
			p := filepath.Join(dir, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p
			}
		}
		break
	}
	return name
}

// launcher makes the command that runs argv (the sandbox's), which ends
// every process of it when ctx is cancelled; nil runs argv directly.
type launcher func(ctx context.Context, argv []string) *exec.Cmd

// execute runs argv in dir with environment env, through launch when it is
// given (the sandbox, which ends every process of the command itself), and
// kills its whole process group when it ends (so background children do
// not outlive it), on timeout or on cancellation. What the command prints
// also goes to tee when it is given (the call's spool). A command whose
// background children kept its output open past WaitDelay succeeded as far
// as its own exit status says.
func execute(ctx context.Context, dir string, argv []string, timeout time.Duration, env []string, keep int, tee io.Writer, launch launcher) (out string, total int64, code int, err error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var cmd *exec.Cmd
	var tree *tree
	if launch != nil {
		cmd = launch(cctx, argv)
		tree = adoptTree(cmd) // the sandbox set up how it ends
	} else {
		cmd = exec.CommandContext(cctx, lookPath(argv[0], env), argv[1:]...)
		tree = newTree(cmd) // a process tree of its own, killed whole below
		cmd.WaitDelay = time.Second
	}
	cmd.Dir, cmd.Env = dir, env
	buf := newOutput(keep)
	cmd.Stdout, cmd.Stderr = buf, buf
	if tee != nil { // the call's spool: what it printed survives a crash
		w := io.MultiWriter(buf, tee)
		cmd.Stdout, cmd.Stderr = w, w
	}
	err = tree.run()
	tree.kill() // what it left running in the background
	out, total = buf.String(), buf.Total()
	if cctx.Err() != nil {
		if ctx.Err() != nil {
			return out, total, -1, ctx.Err()
		}
		return out, total, -1, context.DeadlineExceeded
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return out, total, exit.ExitCode(), nil
	case errors.Is(err, exec.ErrWaitDelay):
		return out, total, cmd.ProcessState.ExitCode(), nil
	}
	return out, total, 0, err
}

// Total is the number of bytes written.
func (b *boundedOutput) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}
