package main

import (
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

// resultLine is the last line of `run --json`, and what the exit code follows.
type resultLine struct {
	Type string `json:"type"` // "result"
	agent.Result
	usageError bool   // bad flags, unknown project or session, no key: exit 2
	hint       string // a line after the error, on stderr: where to read on
}

// exitCode is run's exit status for a result: 0 done, 1 failed or step limit,
// 2 usage or configuration error, 130 cancelled.
func (r resultLine) exitCode() int {
	switch {
	case r.usageError:
		return 2
	case r.Status == store.StatusDone:
		return 0
	case r.Status == store.StatusCancelled:
		return 130
	}
	return 1
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

// report is what a run's events tell the result (guarded by client.mu).
type report struct {
	ended bool // the transcript showed the run's end, with its error
}

// event takes what the result needs from one event.
func (r *report) event(e event.Event) {
	if _, ok := e.Data.(event.RunEnd); ok && e.ContextID == "" {
		r.ended = true
	}
}

// printResult writes the result: the JSON line with --json, else the reply on
// stdout and a closing line on stderr. Each failure is said once: on stderr,
// in one line (and a hint), unless the transcript said it already.
func (cl *client) printResult(r resultLine, stdout io.Writer) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if r.Error != "" && (cl.json || r.Session == "" || !cl.rep.ended) {
		fmt.Fprintf(cl.errw, "agent-lsp run: %s\n", r.Error)
	}
	if r.hint != "" {
		fmt.Fprintln(cl.errw, r.hint)
	}
	if cl.json {
		r.Type = "result"
		b, _ := json.Marshal(r)
		cl.out.Write(b)
		cl.out.WriteByte('\n')
		cl.out.Flush()
		return
	}
	if r.usageError || r.Session == "" {
		return
	}
	if r.Reply != "" {
		fmt.Fprintln(stdout, r.Reply)
	}
	fmt.Fprintln(cl.errw, closing(r))
	switch r.Status {
	case store.StatusCancelled, store.StatusLimit:
		fmt.Fprintf(cl.errw, "resume with: agent-lsp run --resume %s\n", r.Session)
	}
}

// closing is the run's last line: how it ended, its steps, edits, tokens
// and cost (when the price table has the model).
func closing(r resultLine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "session %s: %s after %s, %s, %s", r.Session, r.Status,
		transcript.Count(r.Steps, "step"), transcript.Count(r.Edits, "edit"), transcript.Count(r.Usage.TotalTokens, "token"))
	if r.Usage.Cost > 0 {
		fmt.Fprintf(&b, ", $%.4f", r.Usage.Cost)
	}
	return b.String()
}
