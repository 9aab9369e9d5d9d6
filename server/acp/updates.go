package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/agent/event"
	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// acpCall is a tool call of a session's run as the client was told of it.
type acpCall struct {
	name    string
	args    map[string]any
	content []acp.ToolCallContent // an edit's diff, kept for the final update
}

// acpCalls are the tool calls of a session that started and have not ended.
type acpCalls struct {
	mu   sync.Mutex // guards byID and order
	byID map[string]*acpCall
	// order lists the IDs of byID as they started.
	order []string
}

func (c *acpCalls) start(id string, call *acpCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[id] = call
	c.order = append(c.order, id)
}

// end removes the call and returns it (nil: not open).
func (c *acpCalls) end(id string) *acpCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	call := c.byID[id]
	delete(c.byID, id)
	for i, o := range c.order {
		if o == id {
			c.order = append(c.order[:i:i], c.order[i+1:]...)
			break
		}
	}
	return call
}

// find returns the newest open call that match accepts, and its ID.
func (c *acpCalls) find(match func(*acpCall) bool) (string, *acpCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.order) - 1; i >= 0; i-- {
		if call := c.byID[c.order[i]]; match(call) {
			return c.order[i], call
		}
	}
	return "", nil
}

// addContent adds content to the open call id, for its final update.
func (c *acpCalls) addContent(id string, content acp.ToolCallContent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if call := c.byID[id]; call != nil {
		call.content = append(call.content, content)
	}
}

// open returns the IDs of the open calls, oldest first.
func (c *acpCalls) open() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.order...)
}

// acpUpdates sends one prompt's run events to the client as session/update
// notifications, in order (the runtime calls event one at a time).
type acpUpdates struct {
	conn    *acp.AgentSideConnection
	session *acpSession
	ws      *workspace.Workspace

	mu       sync.Mutex // guards streamed
	streamed bool       // text of the current AI message went out as deltas
}

func (u *acpUpdates) send(upd acp.SessionUpdate) {
	// Background: the prompt's context ends with a cancel, and the updates
	// that end its tool calls must still go out.
	_ = u.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: acp.SessionId(u.session.id), Update: upd})
}

// event translates one run event. Subagents' own events stay inside their
// call_subagent tool call.
func (u *acpUpdates) event(e event.Event) {
	if e.ContextID != "" {
		return
	}
	switch d := e.Data.(type) {
	case event.MessageDelta:
		u.mu.Lock()
		u.streamed = true
		u.mu.Unlock()
		if d.Text != "" {
			u.send(acp.UpdateAgentMessageText(d.Text))
		}
	case event.Message:
		u.mu.Lock()
		streamed := u.streamed
		u.streamed = false
		u.mu.Unlock()
		if d.Message.Role == message.AI && !streamed && d.Message.Content != "" {
			u.send(acp.UpdateAgentMessageText(d.Message.Content))
		}
	case event.ToolStart:
		args := map[string]any{}
		json.Unmarshal([]byte(d.Args), &args)
		u.session.calls.start(d.CallID, &acpCall{name: d.Name, args: args})
		u.send(acp.StartToolCall(acp.ToolCallId(d.CallID), toolTitle(d.Name, args), acp.WithStartKind(toolKind(d.Name)),
			acp.WithStartStatus(acp.ToolCallStatusInProgress), acp.WithStartLocations(u.locations(args)), acp.WithStartRawInput(args)))
		if d.Name == "todo_write" {
			u.send(acp.UpdatePlan(planEntries(args)...))
		}
	case event.ToolEnd:
		call := u.session.calls.end(d.CallID)
		status := acp.ToolCallStatusCompleted
		if !d.OK {
			status = acp.ToolCallStatusFailed
		}
		var content []acp.ToolCallContent
		if call != nil {
			content = call.content
		}
		if d.Summary != "" {
			content = append(content, acp.ToolContent(acp.TextBlock(d.Summary)))
		}
		u.send(acp.UpdateToolCall(acp.ToolCallId(d.CallID), acp.WithUpdateStatus(status), acp.WithUpdateContent(content)))
	}
}

// endOpenCalls ends the tool calls a run left open (it was cancelled or
// failed mid-call): none stays in progress in the client.
func (u *acpUpdates) endOpenCalls(status store.Status) {
	why := "not finished: the run was " + string(status)
	if status == "" {
		why = "not finished: the run failed"
	}
	for _, id := range u.session.calls.open() {
		u.session.calls.end(id)
		u.send(acp.UpdateToolCall(acp.ToolCallId(id), acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(why))})))
	}
}

// locations are the files a tool call's arguments name, as absolute paths.
func (u *acpUpdates) locations(args map[string]any) []acp.ToolCallLocation {
	path, _ := args["path"].(string)
	if path == "" {
		return nil
	}
	return []acp.ToolCallLocation{{Path: u.abs(path, args)}}
}

// abs resolves a tool's path argument in its project (the session's, or the
// one the arguments name).
func (u *acpUpdates) abs(path string, args map[string]any) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	name, _ := args["project"].(string)
	if name == "" {
		name = u.session.project
	}
	if p, ok := u.ws.Project(name); ok {
		return filepath.Join(p.Root(), path)
	}
	return path
}

// askPermission asks with session/request_permission, attached to the
// tool call the question is about.
func (u *acpUpdates) askPermission(ctx context.Context, q session.PermissionQuestion) (string, error) {
	id, _ := u.session.calls.find(func(c *acpCall) bool {
		if q.Tool != "" {
			return c.name == q.Tool
		}
		cmd, _ := c.args["command"].(string)
		return c.name == "run_command" && strings.TrimSpace(cmd) == strings.TrimSpace(q.Command)
	})
	// The question is about a tool call the client shows already: the update
	// names it only (its fields would replace the call's title and content).
	// A question without one gets its own, titled with the question.
	call := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(id)}
	if id == "" {
		call = acp.ToolCallUpdate{ToolCallId: acp.ToolCallId("permission-" + message.NewID()), Title: ptr(firstLine(q.Text)),
			Content: []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(q.Text))}}
	}
	resp, err := u.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: acp.SessionId(u.session.id), ToolCall: call,
		Options: []acp.PermissionOption{
			{OptionId: "allow_once", Name: session.AllowOnce, Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "allow_always", Name: session.AllowAlways, Kind: acp.PermissionOptionKindAllowAlways},
			{OptionId: "reject_once", Name: session.Deny, Kind: acp.PermissionOptionKindRejectOnce},
		}})
	if err != nil {
		return "", err
	}
	if resp.Outcome.Selected == nil {
		return "", nil // cancelled
	}
	switch resp.Outcome.Selected.OptionId {
	case "allow_once":
		return session.AllowOnce, nil
	case "allow_always":
		return session.AllowAlways, nil
	}
	return session.Deny, nil
}

// toolKind is the ACP kind of a tool.
func toolKind(name string) acp.ToolKind {
	switch name {
	case "read_file":
		return acp.ToolKindRead
	case "edit_file", "create_file":
		return acp.ToolKindEdit
	case "search", "list_files":
		return acp.ToolKindSearch
	case "run_command":
		return acp.ToolKindExecute
	case "todo_write", "call_subagent":
		return acp.ToolKindThink
	}
	return acp.ToolKindOther
}

// toolTitle is a tool call as a short line: the tool and what it is about.
func toolTitle(name string, args map[string]any) string {
	for _, key := range []string{"command", "path", "pattern", "task", "project"} {
		if v, ok := args[key].(string); ok && v != "" {
			if len(v) > 80 {
				v = v[:77] + "..."
			}
			return name + " " + firstLine(v)
		}
	}
	return name
}

// planEntries are todo_write's todos as a plan.
func planEntries(args map[string]any) []acp.PlanEntry {
	todos, _ := args["todos"].([]any)
	out := []acp.PlanEntry{}
	for _, t := range todos {
		m, _ := t.(map[string]any)
		content, _ := m["content"].(string)
		status, _ := m["status"].(string)
		st := acp.PlanEntryStatusPending
		switch status {
		case "in_progress":
			st = acp.PlanEntryStatusInProgress
		case "completed":
			st = acp.PlanEntryStatusCompleted
		}
		out = append(out, acp.PlanEntry{Content: content, Priority: acp.PlanEntryPriorityMedium, Status: st})
	}
	return out
}

// replay is a stored conversation as session/update notifications: the
// user's and the agent's messages, and each tool call with its final status
// and result.
func replay(msgs []message.Message, s *acpSession, ws *workspace.Workspace) []acp.SessionUpdate {
	u := &acpUpdates{session: s, ws: ws}
	var out []acp.SessionUpdate
	results := map[string]message.Message{}
	for _, m := range msgs {
		if m.Role == message.Tool {
			results[m.ToolCallID] = m
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case message.Human:
			out = append(out, acp.UpdateUserMessageText(m.Content))
		case message.AI:
			if m.Content != "" {
				out = append(out, acp.UpdateAgentMessageText(m.Content))
			}
			for _, c := range m.ToolCalls {
				args := map[string]any{}
				json.Unmarshal([]byte(c.Args), &args)
				status := acp.ToolCallStatusFailed
				var content []acp.ToolCallContent
				if r, ok := results[c.ID]; ok {
					if !strings.HasPrefix(r.Content, "error:") && !strings.HasPrefix(r.Content, "not allowed") {
						status = acp.ToolCallStatusCompleted
					}
					content = []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(cut(r.Content, 2000)))}
				} else {
					content = []acp.ToolCallContent{acp.ToolContent(acp.TextBlock("not finished: the run stopped before it"))}
				}
				out = append(out, acp.StartToolCall(acp.ToolCallId(c.ID), toolTitle(c.Name, args), acp.WithStartKind(toolKind(c.Name)),
					acp.WithStartStatus(status), acp.WithStartLocations(u.locations(args)), acp.WithStartRawInput(args), acp.WithStartContent(content)))
			}
		}
	}
	return out
}

// cut shortens s to about n bytes, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf("\n… (%d more bytes)", len(s)-n) // never half a character
}
