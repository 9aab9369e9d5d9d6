// Package event holds the events of an agent run, typed: one struct per kind,
// with the kind's wire name as the discriminator. The runtime emits them, the
// server sends them as agent/event notifications (docs/protocol.md), and the
// headless client and `sessions show` render them.
//
// On the wire an event is one flat JSON object: the envelope (session, seq,
// type, and contextId/parentId for a subagent's events) and the kind's fields.
package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/store"
)

// Type is an event kind's wire name, e.g. "tool.start".
type Type string

// Data is what one kind of event carries.
type Data interface {
	// Type is the kind's wire name.
	Type() Type
}

// Event is one event of a run: which session (and subagent) it is about, its
// place in the session's sequence, and what happened.
type Event struct {
	Session string
	// Seq rises by one per session on the wire; the server sets it, the
	// runtime leaves it 0.
	Seq int64
	// ContextID is the subagent that produced the event ("" for the session's
	// own run) and ParentID the context that started that subagent.
	ContextID, ParentID string
	Data                Data
}

// Type returns the event's kind, or "" when it has no data.
func (e Event) Type() Type {
	if e.Data == nil {
		return ""
	}
	return e.Data.Type()
}

// The kinds of event, in the order a run produces them.

// RunStart opens a run (agent.run or agent.resume) in a project, with the
// model's context size the run fits its requests in and the tools withheld
// because their definitions would take more than their share of it.
type RunStart struct {
	Project       string   `json:"project"`
	ContextTokens int      `json:"contextTokens"`
	Withheld      []string `json:"withheld,omitempty"`
	Mode          string   `json:"mode,omitempty"`   // agent, plan or ask ("": agent)
	Budget        *Budget  `json:"budget,omitempty"` // the run's limits, when it has any
}

// Budget is what a run's limits allow (a zero limit: none) and what it has
// spent against them: prompt plus completion tokens as reported, estimated
// where a report is missing, over its calls, summaries and subagents.
type Budget struct {
	MaxTokens int     `json:"maxTokens,omitzero"`
	MaxCost   float64 `json:"maxCost,omitzero"`
	Tokens    int     `json:"tokens"`
	Cost      float64 `json:"cost,omitzero"`
}

// MessageDelta is streamed text of the model's answer, batched by the server.
// Subagents' deltas stay in their own transcripts.
type MessageDelta struct {
	Text string `json:"text"`
}

// Message is a complete human or AI message, as stored.
type Message struct {
	Message message.Message `json:"message"`
}

// MessageQueued is a prompt given to the running session: it waits at
// Position (from 1) for the run's next step, where a Message event reports
// it read.
type MessageQueued struct {
	Message  message.Message `json:"message"`
	Position int             `json:"position"`
}

// ContextCompacted reports that older turns left the model's view: folded
// into the summary by a model call (Summarized), or dropped when that call
// failed (Error says why). Before and After are the estimated tokens of the
// history the model would see, Messages how many messages left it.
type ContextCompacted struct {
	Before     int    `json:"before"`
	After      int    `json:"after"`
	Messages   int    `json:"messages"`
	Summarized bool   `json:"summarized"`
	Reason     string `json:"reason"` // "budget", or "overflow" after the provider refused a request
	Error      string `json:"error,omitempty"`
}

// ToolStart is a tool call about to run; Args is the model's raw JSON.
type ToolStart struct {
	Name   string `json:"name"`
	Args   string `json:"args"`
	CallID string `json:"callId"`
}

// ToolEnd is a tool call's outcome, with a few words for progress, and
// Output, the end of the result the model got as Tail cuts it (a command's
// last output lines, why an edit was refused), for editors to show.
type ToolEnd struct {
	CallID  string  `json:"callId"`
	Name    string  `json:"name"`
	OK      bool    `json:"ok"`
	Summary string  `json:"summary"`
	Output  string  `json:"output,omitempty"`
	Denied  *Denial `json:"denied,omitempty"` // the call did not run: it was not allowed
}

// Denial is a tool call that was not allowed: what it wanted to do (a
// command line, a tool's name) and the rule that would allow it ("" when
// none would: a deny rule, the user's answer).
type Denial struct {
	What     string `json:"what"`
	RuleHint string `json:"ruleHint,omitempty"`
}

// The bounds of ToolEnd.Output.
const (
	TailLines = 20
	TailBytes = 2048
)

// Tail returns the end of a tool result for ToolEnd.Output: its last
// TailLines lines without the trailing blank ones, at most TailBytes bytes.
// Lines are whole unless the last one alone is longer, which keeps its end;
// the text stays valid UTF-8 where the result was.
func Tail(result string) string {
	t := strings.TrimRight(result, " \t\r\n")
	start := len(t) + 1 // t[start:] is kept, whole lines; t[start-1] is the newline before them
	for n := 0; n < TailLines && start > 0; n++ {
		from := strings.LastIndexByte(t[:start-1], '\n') + 1
		if len(t)-from > TailBytes {
			if n > 0 {
				break
			}
			k := len(t) - TailBytes // one line longer than the bound: its end
			for k < len(t) && !utf8.RuneStart(t[k]) {
				k++
			}
			return t[k:]
		}
		start = from
	}
	return t[start:]
}

// SubagentStart is a subagent starting a task; the envelope's ContextID and
// ParentID name it and its parent.
type SubagentStart struct {
	Task string `json:"task"`
}

// SubagentEnd is a subagent's end.
type SubagentEnd struct {
	OK     bool         `json:"ok"`
	Status store.Status `json:"status"`
	// Branch is the branch a subagent in a worktree committed to.
	Branch string `json:"branch,omitempty"`
}

// Edit reports whether the editor applied an edit of the file URI.
type Edit struct {
	URI     string `json:"uri"`
	Applied bool   `json:"applied"`
}

// RunEnd closes a run with its status, and for a failed run the reason.
type RunEnd struct {
	Status store.Status `json:"status"`
	Error  string       `json:"error,omitempty"`
	Limit  string       `json:"limit,omitempty"` // status limit: which (steps, tokens, cost)
	// Branch is the branch a run in a worktree committed its changes to;
	// Worktree the worktree's folder when it could not be removed.
	Branch   string `json:"branch,omitempty"`
	Worktree string `json:"worktree,omitempty"`
}

// EventsDropped stands for events of the session a connection did not get:
// it did not read them, and the server dropped Count of them, FromSeq to
// ToSeq, rather than hold the run. The server sends it (with ToSeq as its
// seq) when the connection reads again; the client then reads the session
// again (agent.session). The runtime never emits it.
type EventsDropped struct {
	Count   int   `json:"count"`
	FromSeq int64 `json:"fromSeq"`
	ToSeq   int64 `json:"toSeq"`
}

// Type implements Data.
func (EventsDropped) Type() Type { return "events.dropped" }

// Type implements Data.
func (RunStart) Type() Type { return "run.start" }

// Type implements Data.
func (MessageDelta) Type() Type { return "message.delta" }

// Type implements Data.
func (Message) Type() Type { return "message" }

// Type implements Data.
func (MessageQueued) Type() Type { return "message.queued" }

// Type implements Data.
func (ContextCompacted) Type() Type { return "context.compacted" }

// Type implements Data.
func (ToolStart) Type() Type { return "tool.start" }

// Type implements Data.
func (ToolEnd) Type() Type { return "tool.end" }

// Type implements Data.
func (SubagentStart) Type() Type { return "subagent.start" }

// Type implements Data.
func (SubagentEnd) Type() Type { return "subagent.end" }

// Type implements Data.
func (Edit) Type() Type { return "edit" }

// Type implements Data.
func (RunEnd) Type() Type { return "run.end" }

// Usage is sent after each model call of a run (its subagents' and its
// summaries' included): the call's tokens as the endpoint reported them,
// and the run's so far.
type Usage struct {
	Model         string   `json:"model"`
	Prompt        int      `json:"prompt"`
	Completion    int      `json:"completion"`
	Total         int      `json:"total"`
	ContextTokens int      `json:"contextTokens"`    // the context size the request was fitted into
	Cost          float64  `json:"cost,omitzero"`    // USD, when the price table has the model
	Run           RunUsage `json:"run"`              // cumulative over the run, subagents included
	Budget        *Budget  `json:"budget,omitempty"` // the run's limits and what it spent against them, when it has any
}

// RunUsage is a run's tokens (and cost) so far.
type RunUsage struct {
	Prompt     int     `json:"prompt"`
	Completion int     `json:"completion"`
	Total      int     `json:"total"`
	Cost       float64 `json:"cost,omitzero"`
}

// Type implements Data.
func (Usage) Type() Type { return "usage" }

type kind struct {
	zero   Data
	decode func([]byte) (Data, error)
}

// kinds is the table of event kinds, in the order a run produces them: each
// kind's zero value and its decoder. A new kind is a struct, its Type method
// and one row here.
var kinds = []kind{
	{RunStart{}, decode[RunStart]},
	{MessageDelta{}, decode[MessageDelta]},
	{Message{}, decode[Message]},
	{MessageQueued{}, decode[MessageQueued]},
	{ContextCompacted{}, decode[ContextCompacted]},
	{ToolStart{}, decode[ToolStart]},
	{ToolEnd{}, decode[ToolEnd]},
	{SubagentStart{}, decode[SubagentStart]},
	{SubagentEnd{}, decode[SubagentEnd]},
	{Edit{}, decode[Edit]},
	{Usage{}, decode[Usage]},
	{RunEnd{}, decode[RunEnd]},
	{EventsDropped{}, decode[EventsDropped]},
}

// Types lists every event kind's wire name, in the order a run produces them.
func Types() []Type {
	out := make([]Type, len(kinds))
	for i, k := range kinds {
		out[i] = k.zero.Type()
	}
	return out
}

// Zero returns the zero value of a kind's data, or nil for an unknown type.
func Zero(t Type) Data {
	for _, k := range kinds {
		if k.zero.Type() == t {
			return k.zero
		}
	}
	return nil
}

func decode[D Data](b []byte) (Data, error) {
	var d D
	err := json.Unmarshal(b, &d)
	return d, err
}

type envelope struct {
	Session   string `json:"session"`
	Seq       int64  `json:"seq"`
	Type      Type   `json:"type"`
	ContextID string `json:"contextId,omitempty"`
	ParentID  string `json:"parentId,omitempty"`
}

// MarshalJSON writes the flat wire object: the envelope, then the kind's
// fields, with <, > and & as they are (encoding/json escapes them again when
// it calls this method; a client decoding the object sees the same text).
func (e Event) MarshalJSON() ([]byte, error) {
	if e.Data == nil {
		return nil, fmt.Errorf("event of session %s has no data", e.Session)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(envelope{e.Session, e.Seq, e.Data.Type(), e.ContextID, e.ParentID}); err != nil {
		return nil, err
	}
	n := b.Len() // the envelope and its newline
	if err := enc.Encode(e.Data); err != nil {
		return nil, err
	}
	out := b.Bytes()
	body := out[n : len(out)-1]
	if string(body) == "{}" {
		return out[:n-1], nil
	}
	// {envelope}\n{body}\n becomes {envelope,body}, in place.
	out[n-2] = ','
	return append(out[:n-1], body[1:]...), nil
}

// UnmarshalJSON reads the flat wire object. An unknown type is an error that
// names it, so a client can skip events newer than itself.
func (e *Event) UnmarshalJSON(b []byte) error {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return err
	}
	i := slices.IndexFunc(kinds, func(k kind) bool { return k.zero.Type() == env.Type })
	if i < 0 {
		return &UnknownTypeError{Type: env.Type}
	}
	d, err := kinds[i].decode(b)
	if err != nil {
		return fmt.Errorf("event %s: %w", env.Type, err)
	}
	*e = Event{Session: env.Session, Seq: env.Seq, ContextID: env.ContextID, ParentID: env.ParentID, Data: d}
	return nil
}

// UnknownTypeError is returned when decoding an event of a kind this version
// does not know.
type UnknownTypeError struct{ Type Type }

func (e *UnknownTypeError) Error() string {
	if e.Type == "" {
		return "event has no type"
	}
	return fmt.Sprintf("unknown event type %q", e.Type)
}
