package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

const runUsage = `Usage: agent-lsp run [flags] [PROMPT | -]

Runs the agent headless on one or more workspace folders and applies its edits
to the files on disk. The prompt is the argument, or standard input when it is
"-" or absent:

  agent-lsp run "fix the failing test"
  git diff | agent-lsp run - --json
  agent-lsp run --resume s-01J...        # finish an interrupted session
  agent-lsp run --durability sync "..."  # every step on disk before the next

Without --json the transcript goes to stderr and only the final reply to
stdout. With --json, stdout has one agent/event object per line and always
ends with one {"type":"result",...} line.

Exit status: 0 done, 1 failed or step limit, 2 usage error, 130 cancelled
(SIGINT/SIGTERM cancel the run cleanly; --resume completes it later).

Commands other than the project's build and test need --allow; --deny wins.

Flags:
`

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type runFlags struct {
	workspaces, allow, deny multiFlag
	project, session        string
	resume                  string
	json                    bool
	model, baseURL, store   string
	maxSteps                int
	durability              string
}

func runCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var f runFlags
	fs := flag.NewFlagSet("agent-lsp run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&f.workspaces, "workspace", "workspace folder (repeatable; default: the current directory)")
	fs.StringVar(&f.project, "project", "", "project (folder name) to work in; default: the first")
	fs.StringVar(&f.session, "session", "", "continue this session with a new prompt")
	fs.StringVar(&f.resume, "resume", "", "resume this interrupted session (no prompt)")
	fs.BoolVar(&f.json, "json", false, "print agent/event lines and a result line as JSON on stdout")
	fs.StringVar(&f.model, "model", "", "model name (default from AGENT_LSP_MODEL, else gpt-4o-mini)")
	fs.StringVar(&f.baseURL, "base-url", "", "OpenAI-compatible endpoint (default from OPENAI_BASE_URL)")
	fs.StringVar(&f.store, "store", "", "session store file (default from AGENT_LSP_STORE, else ~/.local/state/agent-lsp/sessions.db)")
	fs.IntVar(&f.maxSteps, "max-steps", 0, "step limit of the run (default 100)")
	fs.StringVar(&f.durability, "durability", "", "when checkpoints reach the disk: sync (every step), batched (groups; default) or exit (at the run's end)")
	fs.Var(&f.allow, "allow", "allow commands matching PATTERN (* matches anything; repeatable)")
	fs.Var(&f.deny, "deny", "deny commands matching PATTERN (repeatable; wins over --allow)")
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	usageErr := func(format string, a ...any) int {
		msg := fmt.Sprintf(format, a...)
		fmt.Fprintf(stderr, "agent-lsp run: %s\n", msg)
		if f.json {
			writeJSON(stdout, map[string]any{"type": "result", "status": "failed", "error": msg, "reply": "", "edits": 0, "steps": 0, "session": ""})
		}
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return usageErr("%v", err)
	}
	if f.resume != "" && f.session != "" {
		return usageErr("--resume and --session exclude each other")
	}
	if fs.NArg() > 1 {
		return usageErr("one prompt only; quote it (got %d arguments)", fs.NArg())
	}
	prompt := fs.Arg(0)
	if f.resume == "" && (prompt == "" || prompt == "-") {
		b, err := io.ReadAll(stdin)
		if err != nil {
			return usageErr("read prompt from stdin: %v", err)
		}
		prompt = string(b)
		if strings.TrimSpace(prompt) == "" {
			return usageErr("no prompt: give one as an argument or on standard input")
		}
	}
	if _, err := store.ParseDurability(f.durability); err != nil {
		return usageErr("--durability: %v", err)
	}
	if len(f.workspaces) == 0 {
		wd, _ := os.Getwd()
		f.workspaces = multiFlag{wd}
	}
	for i, w := range f.workspaces {
		abs, err := filepath.Abs(w)
		if err != nil {
			return usageErr("%v", err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return usageErr("--workspace %s: not a folder", w)
		}
		f.workspaces[i] = abs
	}
	return headless(f, prompt, stdout, stderr)
}

func writeJSON(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}

// client is the headless LSP client: it applies edits to disk, denies what
// was not allowed, and prints the transcript.
type client struct {
	json   bool
	out    *bufio.Writer
	errw   io.Writer
	mu     sync.Mutex
	inText bool
	enc    workspace.Encoding
}

func (c *client) printEvent(raw json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.json {
		c.out.Write(raw)
		c.out.WriteByte('\n')
		c.out.Flush()
		return
	}
	var e agent.Event
	if json.Unmarshal(raw, &e) != nil {
		return
	}
	line := func(format string, a ...any) {
		if c.inText {
			fmt.Fprintln(c.errw)
			c.inText = false
		}
		fmt.Fprintf(c.errw, format+"\n", a...)
	}
	indent := ""
	if e.ContextID != "" {
		indent = "  [" + e.ContextID + "] "
	}
	switch e.Type {
	case "message.delta":
		fmt.Fprint(c.errw, e.Text)
		c.inText = true
	case "tool.start":
		line("%s→ %s %s", indent, e.Name, e.Args)
	case "tool.end":
		mark := "✓"
		if e.OK != nil && !*e.OK {
			mark = "✗"
		}
		line("%s  %s %s", indent, mark, e.Summary)
	case "subagent.start":
		line("%s⇢ subagent: %s", indent, e.Task)
	case "subagent.end":
		line("%s⇠ subagent %s", indent, e.Status)
	case "edit":
		state := "applied"
		if e.Applied != nil && !*e.Applied {
			state = "refused"
		}
		line("%s  edit %s: %s", indent, strings.TrimPrefix(e.URI, "file://"), state)
	case "run.end":
		line("— %s", e.Status)
	}
}

// handle runs notifications in arrival order on the read loop (so events
// print in order) and answers requests asynchronously.
func (c *client) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	params := json.RawMessage(append([]byte(nil), req.Params()...))
	method := strings.Clone(req.Method())
	if req.IsCall() {
		jsonrpc2.Async(ctx)
	}
	switch method {
	case "agent/event":
		c.printEvent(params)
		return nil, nil
	case "window/logMessage", "window/showMessage":
		var p struct{ Message string }
		json.Unmarshal(params, &p)
		c.mu.Lock()
		fmt.Fprintln(c.errw, p.Message)
		c.mu.Unlock()
		return nil, nil
	case "workspace/applyEdit":
		return c.applyEdit(params), nil
	case "window/showMessageRequest":
		return map[string]string{"title": server.Deny}, nil // not allowed by --allow
	case "window/workDoneProgress/create":
		return nil, nil
	}
	if req.IsCall() {
		return nil, jsonrpc2.Errorf(jsonrpc2.MethodNotFound, "headless client: %s", method)
	}
	return nil, nil
}

// applyEdit writes a WorkspaceEdit's documentChanges to disk.
func (c *client) applyEdit(params json.RawMessage) map[string]any {
	var p struct {
		Edit struct {
			DocumentChanges []struct {
				Kind         string `json:"kind"`
				URI          string `json:"uri"`
				TextDocument struct {
					URI string `json:"uri"`
				} `json:"textDocument"`
				Edits []struct {
					Range   workspace.Range `json:"range"`
					NewText string          `json:"newText"`
				} `json:"edits"`
			} `json:"documentChanges"`
		} `json:"edit"`
	}
	fail := func(err error) map[string]any { return map[string]any{"applied": false, "failureReason": err.Error()} }
	if err := json.Unmarshal(params, &p); err != nil {
		return fail(err)
	}
	for _, ch := range p.Edit.DocumentChanges {
		switch {
		case ch.Kind == "create":
			path := uri.URI(ch.URI).FsPath()
			if _, err := os.Stat(path); err == nil {
				return fail(fmt.Errorf("%s exists", path))
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fail(err)
			}
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				return fail(err)
			}
		case ch.Kind != "":
			return fail(fmt.Errorf("unsupported change %q", ch.Kind))
		default:
			path := uri.URI(ch.TextDocument.URI).FsPath()
			b, err := os.ReadFile(path)
			if err != nil {
				return fail(err)
			}
			changes := make([]workspace.Change, len(ch.Edits))
			// LSP edits of one document refer to the original text: apply back to front.
			for i, e := range ch.Edits {
				r := e.Range
				changes[len(ch.Edits)-1-i] = workspace.Change{Range: &r, Text: e.NewText}
			}
			text, err := workspace.ApplyChanges(string(b), changes, c.enc)
			if err != nil {
				return fail(err)
			}
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				return fail(err)
			}
		}
	}
	return map[string]any{"applied": true}
}

type pipeRWC struct {
	io.Reader
	io.Writer
	closers []io.Closer
}

func (p pipeRWC) Close() error {
	for _, c := range p.closers {
		c.Close()
	}
	return nil
}

func headless(f runFlags, prompt string, stdout, stderr io.Writer) int {
	ctx := context.Background()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- server.Serve(ctx, c2sR, s2cW, server.Options{Model: f.model, BaseURL: f.baseURL, StorePath: f.store, MaxSteps: f.maxSteps, Durability: f.durability,
			Logf: func(string, ...any) {}})
		s2cW.Close()
	}()
	cl := &client{json: f.json, out: bufio.NewWriter(stdout), errw: stderr, enc: workspace.UTF8}
	conn := jsonrpc2.NewConn(jsonrpc2.NewHeaderStream(pipeRWC{s2cR, c2sW, []io.Closer{c2sW, s2cR}}))
	conn.Go(ctx, cl.handle)
	defer conn.Close()

	result := func(res map[string]any) int {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		status, _ := res["status"].(string)
		if status == "usage" {
			res["status"] = "failed"
		}
		if f.json {
			res["type"] = "result"
			b, _ := json.Marshal(res)
			cl.out.Write(b)
			cl.out.WriteByte('\n')
			cl.out.Flush()
			if e, _ := res["error"].(string); e != "" {
				fmt.Fprintf(stderr, "agent-lsp run: %s\n", e)
			}
		} else {
			if reply, _ := res["reply"].(string); reply != "" {
				fmt.Fprintln(stdout, reply)
			}
			if e, _ := res["error"].(string); e != "" {
				fmt.Fprintf(stderr, "agent-lsp run: %s\n", e)
			}
			fmt.Fprintf(stderr, "session %v: %s after %v steps, %v edits\n", res["session"], status, res["steps"], res["edits"])
			if status == "cancelled" {
				fmt.Fprintf(stderr, "resume with: agent-lsp run --resume %v\n", res["session"])
			}
		}
		switch status {
		case "done":
			return 0
		case "cancelled":
			return 130
		case "usage":
			return 2
		}
		return 1
	}

	var folders []map[string]string
	for _, w := range f.workspaces {
		folders = append(folders, map[string]string{"uri": string(uri.File(w)), "name": filepath.Base(w)})
	}
	initOpts := map[string]any{"permissions": map[string]any{"allow": []string(f.allow), "deny": []string(f.deny)}, "edits": "apply"}
	var initRes json.RawMessage
	if _, err := conn.Call(ctx, "initialize", map[string]any{
		"processId": nil, "workspaceFolders": folders, "rootUri": folders[0]["uri"],
		"capabilities":          map[string]any{"general": map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}}},
		"initializationOptions": initOpts,
	}, &initRes); err != nil {
		return result(map[string]any{"status": "failed", "error": "initialize: " + err.Error(), "session": "", "reply": "", "edits": 0, "steps": 0})
	}
	var ir struct {
		Capabilities struct {
			PositionEncoding string `json:"positionEncoding"`
		} `json:"capabilities"`
	}
	json.Unmarshal(initRes, &ir)
	if ir.Capabilities.PositionEncoding == "utf-16" {
		cl.enc = workspace.UTF16
	}
	conn.Notify(ctx, "initialized", map[string]any{})

	command, args := "agent.run", map[string]any{"prompt": prompt}
	if f.project != "" {
		args["project"] = f.project
	}
	if f.session != "" {
		args["session"] = f.session
	}
	if f.resume != "" {
		command, args = "agent.resume", map[string]any{"session": f.resume}
	}
	const token = "headless"
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "\nagent-lsp run: cancelling (again to quit at once)…")
			conn.Notify(ctx, "window/workDoneProgress/cancel", map[string]any{"token": token})
		case <-done:
			return
		}
		select {
		case <-sigs:
			os.Exit(130)
		case <-done:
		}
	}()
	var res map[string]any
	_, err := conn.Call(ctx, "workspace/executeCommand", map[string]any{"command": command, "arguments": []any{args}, "workDoneToken": token}, &res)
	code := 0
	if err != nil {
		var rpcErr *jsonrpc2.Error
		status := "failed"
		if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc2.InvalidParams {
			status = "usage"
		}
		code = result(map[string]any{"status": status, "error": err.Error(), "session": "", "reply": "", "edits": 0, "steps": 0})
	} else {
		code = result(res)
	}
	conn.Call(ctx, "shutdown", nil, nil)
	conn.Notify(ctx, "exit", nil)
	<-served
	return code
}
