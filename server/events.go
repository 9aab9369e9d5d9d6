package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent"
)

// Text deltas are batched into one agent/event every deltaWindow or deltaBytes.
const (
	deltaWindow = 30 * time.Millisecond
	deltaBytes  = 256
)

// sink turns one run's events into agent/event notifications and $/progress.
type sink struct {
	s     *Server
	token json.RawMessage

	mu        sync.Mutex
	session   string
	buf       strings.Builder
	timer     *time.Timer
	ended     bool
	answering bool
}

func newSink(s *Server, token json.RawMessage, command, prompt, session string) *sink {
	k := &sink{s: s, token: token, session: session}
	title := "agent: " + firstWords(prompt, 6)
	if command == "agent.resume" {
		title = "agent: resume " + session
	}
	k.progress(map[string]any{"kind": "begin", "title": title, "cancellable": true})
	return k
}

func firstWords(s string, n int) string {
	w := strings.Fields(s)
	if len(w) > n {
		return strings.Join(w[:n], " ") + "…"
	}
	return strings.Join(w, " ")
}

func (k *sink) progress(v map[string]any) {
	if k.token == nil {
		return
	}
	k.s.conn.Notify(k.s.ctx, "$/progress", map[string]any{"token": k.token, "value": v})
}

func (k *sink) report(msg string) {
	k.progress(map[string]any{"kind": "report", "message": msg})
}

type wireEvent struct {
	Session string `json:"session"`
	Seq     int64  `json:"seq"`
	agent.Event
}

// send writes one agent/event with the session's next sequence number. k.mu is held.
func (k *sink) send(e agent.Event) {
	if k.session == "" {
		k.session = e.Session
	}
	k.s.mu.Lock()
	k.s.seqs[k.session]++
	seq := k.s.seqs[k.session]
	k.s.mu.Unlock()
	k.s.conn.Notify(context.Background(), "agent/event", wireEvent{Session: k.session, Seq: seq, Event: e})
}

// flush sends buffered text deltas. k.mu is held.
func (k *sink) flush() {
	if k.timer != nil {
		k.timer.Stop()
		k.timer = nil
	}
	if k.buf.Len() == 0 {
		return
	}
	k.send(agent.Event{Type: "message.delta", Text: k.buf.String()})
	k.buf.Reset()
}

// event receives the runtime's events.
func (k *sink) event(e agent.Event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.session == "" {
		k.session = e.Session
	}
	if e.Type == "message.delta" {
		if e.ContextID != "" {
			return // subagents' text stays in their own transcript
		}
		if !k.answering {
			k.answering = true
			k.report("model is answering…")
		}
		k.buf.WriteString(e.Text)
		if k.buf.Len() >= deltaBytes {
			k.flush()
		} else if k.timer == nil {
			k.timer = time.AfterFunc(deltaWindow, func() {
				k.mu.Lock()
				defer k.mu.Unlock()
				k.timer = nil
				k.flush()
			})
		}
		return
	}
	k.flush()
	k.answering = false
	k.send(e)
	switch e.Type {
	case "tool.start":
		k.report(strings.TrimSpace(e.Name + " " + target(e.Args)))
	case "subagent.start":
		k.report("subagent started: " + firstWords(e.Task, 8))
	case "subagent.end":
		k.report(fmt.Sprintf("subagent %s: %s", e.ContextID, e.Status))
	case "edit":
		if e.Applied != nil && !*e.Applied {
			k.report("edit refused: " + e.URI)
		}
	case "run.end":
		msg := "status: " + e.Status
		if e.Error != "" {
			msg += " (" + firstWords(e.Error, 20) + ")"
		}
		k.progress(map[string]any{"kind": "end", "message": msg})
		k.ended = true
	}
}

// target picks the most telling argument of a tool call for a progress line.
func target(args string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	for _, key := range []string{"path", "command", "pattern", "project", "task"} {
		if v, ok := m[key].(string); ok && v != "" {
			return firstWords(v, 8)
		}
	}
	return ""
}

// fail ends progress for a run that could not start.
func (k *sink) fail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.ended {
		k.progress(map[string]any{"kind": "end", "message": "failed: " + err.Error()})
		k.ended = true
	}
}

func (k *sink) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.flush()
	if !k.ended {
		k.progress(map[string]any{"kind": "end"})
		k.ended = true
	}
}
