package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"go.lsp.dev/jsonrpc2"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/transcript"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/store"
)

// How `agent-lsp run` ends: the result line, the closing words, the exit
// code.

// resultSchemaVersion is the version of the result line's shape
// (docs/result.schema.json): a field removed or changed in meaning makes a
// new one; a field added does not.
const resultSchemaVersion = 1

// resultLine is the last line of `run --json`, and what the exit code
// follows. Its fields are the server's result (agent.Result), then what
// the client adds.
type resultLine struct {
	Type          string `json:"type"` // "result"
	SchemaVersion int    `json:"schemaVersion"`
	agent.Result
	Model        string       `json:"model,omitempty"`  // the model of the run
	Denied       []denial     `json:"denied"`           // calls that were not allowed, in order
	FilesChanged []fileChange `json:"filesChanged"`     // the files the run changed, in path order
	Cost         *float64     `json:"cost,omitempty"`   // USD, when the price table has the model
	Diff         string       `json:"diff,omitempty"`   // --diff: the unified diff of the run's changes
	Output       any          `json:"output,omitempty"` // --output-schema: the final answer, parsed and valid

	output       any    // the structured output, once valid
	usageError   bool   // bad flags, unknown project or session, no key: exit 2
	failOnDenied bool   // --fail-on-denied: a done run with denials exits 4
	hint         string // a line after the error, on stderr: where to read on
	builtin      string // the built-in slash command that answered (no run)
}

// denial is a call the run was not allowed to make.
type denial struct {
	Tool     string `json:"tool"`
	What     string `json:"what"`
	RuleHint string `json:"ruleHint,omitempty"` // the rule that would allow it
}

// Exit codes of `agent-lsp run` (docs/ci.md).
const (
	exitDone      = 0
	exitFailed    = 1
	exitUsage     = 2 // a bad flag, an unknown project or session, no key, an unreachable store
	exitLimit     = 3 // stopped by a limit: the result's limit says which
	exitDenied    = 4 // done, but something was refused, with --fail-on-denied
	exitCancelled = 130
)

// exitCode is run's exit status for a result.
func (r resultLine) exitCode() int {
	switch {
	case r.usageError:
		return exitUsage
	case r.Status == store.StatusDone && r.failOnDenied && len(r.Denied) > 0:
		return exitDenied
	case r.Status == store.StatusDone, r.Status == agent.StatusQueued:
		return exitDone
	case r.Status == store.StatusLimit:
		return exitLimit
	case r.Status == store.StatusCancelled:
		return exitCancelled
	}
	return exitFailed
}

func failed(err error, usage bool) resultLine {
	return resultLine{Result: agent.Result{Status: store.StatusFailed, Error: plain(err.Error())}, usageError: usage}
}

// rpcFailed is the result of a request the server refused: a usage error
// when the request cannot be served as given (InvalidParams), said in the
// CLI's words when the error names a reason.
func rpcFailed(err error) resultLine {
	var rpcErr *jsonrpc2.Error
	if !errors.As(err, &rpcErr) {
		return failed(err, false)
	}
	res := failed(err, rpcErr.Code == jsonrpc2.InvalidParams)
	var data server.ReasonData
	if len(rpcErr.Data) > 0 && json.Unmarshal(rpcErr.Data, &data) == nil && data.Reason != "" {
		res.Reason = data.Reason
		if msg := reasonWords(data); msg != "" {
			res.Error = msg
		}
	}
	return res
}

// reasonWords says what to do about a reason with the CLI's flags and
// variables ("" for a reason it has no words of its own for).
func reasonWords(d server.ReasonData) string {
	switch d.Reason {
	case agent.ReasonNoAPIKey:
		return fmt.Sprintf("no API key: %s needs one and %s is not set; set it, or give --base-url of a server that needs none (e.g. http://localhost:11434/v1 for Ollama)", d.BaseURL, d.APIKeyEnv)
	case agent.ReasonModelUnknown:
		return fmt.Sprintf("%s does not offer the model %q; pick one with --model: %s", d.BaseURL, d.Model, strings.Join(d.Models, ", "))
	}
	return ""
}

// internalWords are the server's own words that mean nothing on a command
// line: a command's name before its message, a graph node's.
var internalWords = regexp.MustCompile(`^(?:(?:agent\.[A-Za-z]+|initialize|node [a-z]+): )+`)

// plain is a server's message in the CLI's words.
func plain(msg string) string {
	msg = internalWords.ReplaceAllString(msg, "")
	return strings.ReplaceAll(msg, "in this window", "in this run's --workspace")
}

// report is what a run's events and edits tell the result (guarded by
// client.mu).
type report struct {
	workspaces []string // the run's folders, which paths are relative to
	ended      bool     // the transcript showed the run's end, with its error
	model      string   // the model that answered
	denied     []denial
	files      fileChanges
}

// event takes what the result needs from one event.
func (r *report) event(e event.Event) {
	switch d := e.Data.(type) {
	case event.RunEnd:
		r.ended = r.ended || e.ContextID == ""
	case event.Usage:
		if e.ContextID == "" {
			r.model = d.Model
		}
	case event.ToolEnd:
		if d.Denied != nil {
			r.denied = append(r.denied, denial{Tool: d.Name, What: d.Denied.What, RuleHint: d.Denied.RuleHint})
		}
	}
}

// touching records the files an edit changes before it is applied (their
// text before the run), or, refused (a protected file), as denied.
func (c *client) touching(paths []string, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range paths {
		if !refused {
			c.rep.files.remember(p)
			continue
		}
		rel := relTo(c.rep.workspaces, p)
		c.rep.denied = append(c.rep.denied, denial{Tool: "edit", What: rel, RuleHint: "--allow-edit " + rel})
		if !c.json {
			fmt.Fprintf(c.errw, "  %s\n", transcript.Denied(event.Denial{What: "edit " + rel, RuleHint: "--allow-edit " + rel}))
		}
	}
}

// finish completes the result line with what the client saw: the model,
// the denials, the limit, the files changed (and the diff with --diff),
// the cost and the structured output.
func (cl *client) finish(r resultLine, f runFlags, model string) resultLine {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	r.SchemaVersion = resultSchemaVersion
	r.Model = cmp.Or(cl.rep.model, model)
	r.Denied = append([]denial{}, cl.rep.denied...)
	if r.Status == store.StatusLimit && r.Limit == "" {
		r.Limit = agent.LimitSteps // a server before budgets
	}
	var diff string
	r.FilesChanged, diff = cl.rep.files.diff(f.workspaces)
	if f.diff {
		r.Diff = diff
	}
	if r.Usage.Cost > 0 {
		c := r.Usage.Cost
		r.Cost = &c
	}
	r.Output = r.output
	r.failOnDenied = f.failOnDenied
	return r
}

// printResult writes the result: the JSON line with --json, else the reply on
// stdout and a closing line on stderr. Each failure is said once: on stderr,
// in one line (and a hint), unless the transcript said it already.
func (cl *client) printResult(r resultLine, stdout io.Writer) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.ended = true
	if r.Error != "" && (cl.json || r.Session == "" || !cl.rep.ended) {
		fmt.Fprintf(cl.errw, "agent-lsp run: %s\n", r.Error)
	}
	if r.hint != "" {
		fmt.Fprintln(cl.errw, r.hint)
	}
	if cl.json {
		r.Type, r.SchemaVersion = "result", resultSchemaVersion
		if r.Denied == nil { // a run that never started has lists too, empty
			r.Denied = []denial{}
		}
		if r.FilesChanged == nil {
			r.FilesChanged = []fileChange{}
		}
		b, _ := json.Marshal(r)
		cl.out.Write(b)
		cl.out.WriteByte('\n')
		cl.out.Flush()
		return
	}
	if r.usageError || (r.Session == "" && r.builtin == "") {
		return
	}
	switch {
	case r.Output != nil:
		b, _ := json.MarshalIndent(r.Output, "", "  ")
		fmt.Fprintln(stdout, string(b))
	case r.Reply != "":
		fmt.Fprintln(stdout, r.Reply)
	}
	if r.Diff != "" {
		fmt.Fprint(cl.errw, r.Diff)
	}
	fmt.Fprintln(cl.errw, closing(r))
	switch r.Status {
	case store.StatusCancelled, store.StatusLimit:
		fmt.Fprintf(cl.errw, "resume with: agent-lsp run --resume %s\n", r.Session)
	}
	if r.exitCode() == exitDenied {
		fmt.Fprintf(cl.errw, "%s denied (--fail-on-denied)\n", transcript.Count(len(r.Denied), "call"))
	}
}

// writeOutput writes the final answer to path (-o): the structured output
// with --output-schema, else the reply; only for a run that is done.
func writeOutput(r *resultLine, path string) {
	if path == "" || r.Status != store.StatusDone {
		return
	}
	data := []byte(r.Reply)
	if r.Output != nil {
		data, _ = json.MarshalIndent(r.Output, "", "  ")
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	if err := writeAtomic(path, data); err != nil {
		r.Status, r.Error = store.StatusFailed, fmt.Sprintf("-o %s: %v", path, err)
	}
}

// closing is the run's last line: how it ended, its steps, edits, tokens
// and cost (when the price table has the model).
func closing(r resultLine) string {
	if r.builtin != "" && r.Status == store.StatusDone {
		return fmt.Sprintf("/%s: answered by agent-lsp, without the model", r.builtin)
	}
	var b strings.Builder
	status := string(r.Status)
	if r.Limit != "" {
		status += " (" + r.Limit + ")"
	}
	fmt.Fprintf(&b, "session %s: %s after %s, %s, %s", r.Session, status,
		transcript.Count(r.Steps, "step"), transcript.Count(r.Edits, "edit"), transcript.Count(r.Usage.TotalTokens, "token"))
	if r.Usage.Cost > 0 {
		fmt.Fprintf(&b, ", $%.4f", r.Usage.Cost)
	}
	if r.Branch != "" {
		fmt.Fprintf(&b, "; changes on branch %s", r.Branch)
	}
	if r.Worktree != "" {
		fmt.Fprintf(&b, " (the worktree is left in %s)", r.Worktree)
	}
	return b.String()
}
