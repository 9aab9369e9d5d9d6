// Package transcript renders a session as text for a terminal, in one format
// for the live events of a run (`agent-lsp run`) and the stored messages of a
// session (`agent-lsp sessions show`), and holds the short texts made from a
// prompt or a tool call (titles, progress lines).
package transcript

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/message"
)

// Writer writes a transcript to w. It is not safe for concurrent use.
type Writer struct {
	w      io.Writer
	inText bool              // a streamed reply is open on the current line
	calls  map[string]string // tool call ID -> tool name, for stored tool messages
}

// New returns a Writer to w.
func New(w io.Writer) *Writer { return &Writer{w: w, calls: map[string]string{}} }

// MaxToolLines bounds the lines of a stored tool result that Message prints.
const MaxToolLines = 12

func (t *Writer) line(indent, format string, args ...any) {
	if t.inText {
		fmt.Fprintln(t.w)
		t.inText = false
	}
	fmt.Fprintf(t.w, indent+format+"\n", args...)
}

// indent is the prefix of a subagent's lines.
func indent(contextID string) string {
	if contextID == "" {
		return ""
	}
	return "  [" + contextID + "] "
}

// Event writes one live event. Streamed text is written as it comes; the
// complete AI message that follows it adds nothing.
func (t *Writer) Event(e event.Event) {
	in := indent(e.ContextID)
	switch d := e.Data.(type) {
	case event.RunStart:
		t.line("", "── session %s · project %s · context %d tokens", e.Session, d.Project, d.ContextTokens)
		if len(d.Withheld) > 0 {
			t.line("", "   tools left out to fit the context: %s", strings.Join(d.Withheld, ", "))
		}
	case event.MessageQueued:
		t.line(in, "⏸ queued (%d): %s", d.Position, d.Message.Content)
	case event.ContextCompacted:
		if d.Summarized {
			t.line(in, "  ⋯ %d older messages summarized (%d → %d tokens)", d.Messages, d.Before, d.After)
		} else {
			t.line(in, "  ⋯ %d older messages dropped without a summary: %s", d.Messages, d.Error)
		}
	case event.Message:
		switch {
		case d.Message.Role == message.Human:
			t.line(in, "▶ %s", d.Message.Content)
		case d.Message.Role == message.AI && e.ContextID != "" && d.Message.Content != "":
			t.line(in, "%s", FirstWords(d.Message.Content, 30)) // subagents stream nothing
		case t.inText: // the streamed reply is complete
			fmt.Fprintln(t.w)
			t.inText = false
		}
	case event.MessageDelta:
		fmt.Fprint(t.w, d.Text)
		t.inText = true
	case event.ToolStart:
		t.line(in, "→ %s %s", d.Name, d.Args)
	case event.ToolEnd:
		if d.Denied != nil {
			t.line(in, "  %s", Denied(*d.Denied))
			break
		}
		t.line(in, "  %s %s", mark(d.OK), d.Summary)
	case event.SubagentStart:
		t.line(in, "⇢ subagent: %s", d.Task)
	case event.SubagentEnd:
		t.line(in, "⇠ subagent %s", d.Status)
	case event.Edit:
		state := "applied"
		if !d.Applied {
			state = "refused"
		}
		t.line(in, "  edit %s: %s", filePath(d.URI), state)
	case event.EventsDropped:
		t.line("", "  ⋯ %d events not shown (the terminal did not keep up)", d.Count)
	case event.RunEnd:
		if d.Error != "" {
			t.line("", "── %s: %s", d.Status, d.Error)
		} else {
			t.line("", "── %s", d.Status)
		}
	}
}

// Message writes one stored message: the human prompt, the AI's text and tool
// calls, and a tool result's first lines.
func (t *Writer) Message(m message.Message) {
	switch m.Role {
	case message.Human:
		t.line("", "▶ %s", m.Content)
	case message.AI:
		if m.Content != "" {
			t.line("", "%s", strings.TrimRight(m.Content, "\n"))
		}
		for _, c := range m.ToolCalls {
			t.calls[c.ID] = c.Name
			t.line("", "→ %s %s", c.Name, c.Args)
		}
	case message.Tool:
		lines := strings.Split(strings.TrimRight(m.Content, "\n"), "\n")
		ok := !strings.HasPrefix(m.Content, "error:")
		t.line("", "  %s %s", mark(ok), lines[0])
		for i, l := range lines[1:] {
			if i == MaxToolLines-1 {
				t.line("", "    … %d more lines", len(lines)-1-i)
				break
			}
			t.line("", "    %s", l)
		}
	case message.System:
		t.line("", "(system) %s", FirstWords(m.Content, 30))
	}
}

// Denied is a denied call's line: what was not allowed, and the rule that
// would allow it.
func Denied(d event.Denial) string {
	if d.RuleHint == "" {
		return "✗ not allowed: " + d.What
	}
	return fmt.Sprintf("✗ not allowed: %s (allow it with %s)", d.What, d.RuleHint)
}

// Count is n and the noun, plural unless n is 1: "1 edit", "3 edits".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "✗"
}

// FirstWords returns the first n words of s, with "…" when it had more.
func FirstWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		return strings.Join(w[:n], " ") + "…"
	}
	return strings.Join(w, " ")
}

// Title makes a session title from a prompt: its first eight words.
func Title(prompt string) string { return FirstWords(prompt, 8) }

// Target picks the most telling argument of a tool call (a path, a command,
// a pattern, a project or a task), in a few words, for a progress line.
func Target(args string) string {
	var a struct{ Path, Command, Pattern, Project, Task any } // any: a key of another type is skipped
	if json.Unmarshal([]byte(args), &a) != nil {
		return ""
	}
	for _, v := range []any{a.Path, a.Command, a.Pattern, a.Project, a.Task} {
		if s, ok := v.(string); ok && s != "" {
			return FirstWords(s, 8)
		}
	}
	return ""
}

// filePath is a file: URI as the system spells the path (Windows:
// "C:\\w\\a.go", not "/c%3A/w/a.go"); another URI as it is.
func filePath(u string) string {
	if p, err := uri.Parse(u); err == nil && p.IsFile() {
		return p.FsPath()
	}
	return u
}
