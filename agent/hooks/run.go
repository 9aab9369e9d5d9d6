package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// MaxOutput bounds what is kept of a hook's standard output and of its
// standard error: the head; the rest is counted and dropped.
const MaxOutput = 16 << 10

// Exec is how a hook's command runs: in Dir, with Env (the scrubbed command
// environment: no API key, tokens or sockets), through Wrap when it is set
// (the sandbox's command line for argv).
type Exec struct {
	Dir  string
	Env  []string
	Wrap func(argv []string) []string
}

// Set is the hooks of one project's runs, each with how it runs. It is
// built once (Add) and then only read, so runs may call it at once.
type Set struct {
	// Timeout bounds a hook without its own; 0 is DefaultTimeout.
	Timeout time.Duration
	// Log tells the user of a hook that failed; nil discards it.
	Log   func(string)
	hooks []bound
}

type bound struct {
	Hook
	exec Exec
}

// Add appends hooks that run as x says.
func (s *Set) Add(hooks []Hook, x Exec) {
	for _, h := range hooks {
		s.hooks = append(s.hooks, bound{h, x})
	}
}

// Len is the number of hooks.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.hooks)
}

// Input is what a hook reads on its standard input, as JSON.
type Input struct {
	Event   Event  `json:"event"`
	Session string `json:"session"`
	Project string `json:"project"`
	Cwd     string `json:"cwd"` // the project's root, where the hook runs
	// Tool and Arguments: the call (pre_tool, post_tool).
	Tool      string          `json:"tool,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Result and IsError: what the call returned (post_tool).
	Result  *string `json:"result,omitempty"`
	IsError *bool   `json:"is_error,omitempty"`
	// Prompt is the prompt about to be sent (prompt).
	Prompt string `json:"prompt,omitempty"`
	// Status, Reply and Error: how the run ended (stop).
	Status string `json:"status,omitempty"`
	Reply  string `json:"reply,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Output is what one hook said to the model.
type Output struct {
	Hook Hook
	Text string
}

// Outcome is what the hooks of one event decided.
type Outcome struct {
	// Blocked: a hook exited 2 on an event that blocks (pre_tool, prompt);
	// Reason is its standard error and By the hook. Later hooks did not run.
	Blocked bool
	Reason  string
	By      Hook
	// Context is the standard output of prompt hooks that succeeded.
	Context []Output
	// Feedback is the standard error of post_tool hooks that exited 2.
	Feedback []Output
}

// Run runs the hooks of in.Event (of a tool event: those matching in.Tool)
// one after the other, in the order they were added. A hook that fails
// (another non-zero exit, its timeout, a command that cannot start) is
// reported through Log and the event goes on. Run returns early only when
// a hook blocks, or when ctx ends.
func (s *Set) Run(ctx context.Context, in Input) Outcome {
	var out Outcome
	if s.Len() == 0 {
		return out
	}
	sp, ok := lookup(in.Event)
	if !ok {
		return out
	}
	if len(in.Arguments) > 0 && !json.Valid(in.Arguments) {
		in.Arguments, _ = json.Marshal(string(in.Arguments)) // the model's text, as it wrote it
	}
	var payload []byte
	for _, h := range s.hooks {
		if h.Event != in.Event || (sp.tools && !h.Matches(in.Tool)) {
			continue
		}
		if ctx.Err() != nil {
			return out
		}
		if payload == nil {
			in.Cwd = h.exec.Dir
			payload, _ = json.Marshal(in) // strings and valid JSON only: cannot fail
		}
		res := h.run(ctx, payload, s.timeout())
		switch {
		case res.err != nil:
			if ctx.Err() == nil {
				s.report(h.Hook, res.err.Error(), res.stderr)
			}
		case res.code == 0:
			if sp.context && strings.TrimSpace(res.stdout) != "" {
				out.Context = append(out.Context, Output{h.Hook, strings.TrimSpace(res.stdout)})
			}
		case res.code == 2 && sp.blocks:
			out.Blocked, out.By, out.Reason = true, h.Hook, reason(res.stderr)
			return out
		case res.code == 2 && in.Event == PostTool:
			out.Feedback = append(out.Feedback, Output{h.Hook, reason(res.stderr)})
		default:
			s.report(h.Hook, fmt.Sprintf("exit status %d", res.code), res.stderr)
		}
	}
	return out
}

func reason(stderr string) string {
	if r := strings.TrimSpace(stderr); r != "" {
		return r
	}
	return "(the hook gave no reason on its standard error)"
}

func (s *Set) timeout() time.Duration {
	if s.Timeout > 0 {
		return Clamp(s.Timeout)
	}
	return DefaultTimeout
}

// report tells the user of a hook that failed, with the last line of what
// it printed on its standard error.
func (s *Set) report(h Hook, what, stderr string) {
	if s.Log == nil {
		return
	}
	msg := fmt.Sprintf("hook %s (%s) failed: %s", h, origin(h), what)
	if last := lastLine(stderr); last != "" {
		msg += ": " + last
	}
	s.Log(msg + "; the run goes on")
}

// origin says whose a hook is, for messages.
func origin(h Hook) string {
	switch h.Source {
	case SourceProject:
		return "the repository's " + h.Origin
	case SourceEditor:
		return "your " + h.Origin + " setting"
	}
	return "your " + h.Origin
}

// Whose says whose a hook is, for what the model and the user read: "your
// hooks.json", "the repository's .agents/hooks.json".
func Whose(h Hook) string { return origin(h) }

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// result is how one hook's command ended.
type result struct {
	code           int
	stdout, stderr string
	err            error // it did not run to an exit status: timeout, start failure, cancelled
}

// run runs h's command with payload on its standard input, in a session of
// its own (no terminal; its process group is killed when it ends, on
// timeout or cancellation), keeping the head of its output.
func (h bound) run(ctx context.Context, payload []byte, def time.Duration) result {
	timeout := def
	if h.Timeout > 0 {
		timeout = h.Timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	argv := []string{"/bin/sh", "-c", h.Command}
	if h.exec.Wrap != nil {
		argv = h.exec.Wrap(argv)
	}
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = h.exec.Dir
	cmd.Env = append(append([]string(nil), h.exec.Env...), "AGENT_LSP_HOOK_EVENT="+string(h.Event), "AGENT_LSP_PROJECT_DIR="+h.exec.Dir)
	cmd.Stdin = bytes.NewReader(payload)
	stdout, stderr := &capped{max: MaxOutput}, &capped{max: MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	ownGroup(cmd)
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	killGroup(cmd) // what it left running
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case cctx.Err() != nil && ctx.Err() == nil:
		res.err = fmt.Errorf("timed out after %s and was killed", timeout)
	case ctx.Err() != nil:
		res.err = ctx.Err()
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		res.code = cmd.ProcessState.ExitCode()
	case err != nil:
		res.err = fmt.Errorf("could not run: %v", err)
	}
	return res
}

// capped keeps the first max bytes written to it and counts the rest.
type capped struct {
	max int

	mu      sync.Mutex // guards buf and dropped
	buf     []byte
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(p), c.max-len(c.buf))
	c.buf = append(c.buf, p[:n]...)
	c.dropped += int64(len(p) - n)
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dropped == 0 {
		return string(c.buf)
	}
	return strings.ToValidUTF8(string(c.buf), "") + fmt.Sprintf("\n[... %d more bytes dropped]", c.dropped)
}
