//go:build unix

package server_test

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/server"
	"github.com/agent-lsp/agent-lsp/server/config"
)

// eventDocs says when each event kind is sent: adding a kind needs its row.
var eventDocs = map[event.Type]string{
	"run.start":         "a run (agent.run or agent.resume) starts, in a project; `contextTokens` is the model's context size the run fits its requests in, `withheld` the tools left out to fit it; `mode` when not agent; `budget: {maxTokens?, maxCost?, tokens, cost?}` when the run has limits",
	"message.delta":     "the model streams text of its answer (the session's own run only)",
	"message":           "a human or AI message is complete (a queued prompt: when the run reads it)",
	"message.queued":    "a prompt given to the running session waits at `position` for the run's next step",
	"context.compacted": "older turns left the model's view: `summarized` into the summary, or dropped (`error` says why); `before` and `after` are the estimated tokens of the history the model sees, `messages` how many messages left its view; `reason` is budget or overflow",
	"tool.start":        "a tool call starts; `args` is the model's raw JSON",
	"tool.end":          "a tool call ended; `ok` false for an error result; `summary` in a few words; `output` the end of the result the model got (its last 20 lines, at most 2 KB: a command's last output, why an edit was refused); `denied: {what, ruleHint?}` when it did not run because it was not allowed (`ruleHint`: the rule that would allow it, e.g. `--allow \"go build\"` headless)",
	"subagent.start":    "a subagent starts a task (`contextId`, `parentId` in the envelope)",
	"subagent.end":      "a subagent ended with a status; `branch` when it worked in a worktree (docs/worktrees.md): the branch its changes were committed to",
	"edit":              "the editor applied or refused an edit of `uri`",
	"usage":             "after each model call (the run's, its subagents' and its summaries'): that call's `prompt`, `completion` and `total` tokens as the endpoint reported them, the `contextTokens` the request was fitted into, and `run`, the run's totals so far; `cost` (USD) when the price table has the `model`; `budget` when the run has limits: the limits and what the run spent against them (tokens as reported, estimated where missing), from which a client shows what is left",
	"run.end":           "the run ended: `status`, `error` when it failed, `limit` (steps, tokens or cost) when a limit stopped it; `branch` when it ran in a worktree (isolation): the branch its changes were committed to, and `worktree` the folder they were left in when it could not be removed",
	"events.dropped":    "the window did not read its events and the server dropped `count` of them, `fromSeq` to `toSeq` (the envelope's `seq` is `toSeq`), rather than hold the run; sent where they were missing, once the window reads again: the client reads the session again (`agent.session`)",
}

func commandsTable() string {
	var b strings.Builder
	b.WriteString("| command | arguments | result | what it does |\n|---|---|---|---|\n")
	for _, c := range server.Commands {
		args := strings.Join(c.ArgumentNames(), ", ")
		if args == "" {
			args = "none"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Name, args, c.Result, c.Doc)
	}
	return b.String()
}

func eventsTable(t *testing.T) string {
	var b strings.Builder
	b.WriteString("| type | fields | when |\n|---|---|---|\n")
	for _, typ := range event.Types() {
		doc, ok := eventDocs[typ]
		if !ok {
			t.Errorf("event %s has no row in eventDocs", typ)
		}
		var fields []string
		zero := event.Zero(typ)
		rt := reflect.TypeOf(zero)
		for i := range rt.NumField() {
			name, opts, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if strings.Contains(opts, "omitempty") {
				name += "?"
			}
			fields = append(fields, "`"+name+"`")
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", typ, strings.Join(fields, ", "), doc)
	}
	return b.String()
}

// section replaces (with -update) or checks the text between the markers
// <!-- begin: name --> and <!-- end: name --> of a file.
func section(t *testing.T, path, name, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?s)(<!-- begin: ` + name + ` -->\n)(.*?)(<!-- end: ` + name + ` -->)`)
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no %s section (<!-- begin: %s --> ... <!-- end: %s -->)", path, name, name, name)
	}
	if string(m[2]) == want {
		return
	}
	if !*update {
		t.Errorf("the %s table of %s is out of date; run `go test ./server -run TestDocs -update`.\nwant:\n%s", name, path, want)
		return
	}
	out := re.ReplaceAllLiteral(b, []byte(string(m[1])+want+string(m[3])))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocs keeps the tables of docs/protocol.md and the settings table of
// docs/configuration.md equal to the code they describe.
func TestDocs(t *testing.T) {
	section(t, "../docs/protocol.md", "settings", config.Markdown())
	section(t, "../docs/protocol.md", "commands", commandsTable())
	section(t, "../docs/protocol.md", "events", eventsTable(t))
	section(t, "../docs/configuration.md", "settings", config.Markdown())
}
