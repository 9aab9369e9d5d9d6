package server

import (
	"context"
	"encoding/json"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"

	"github.com/agent-lsp/agent-lsp/agent/event"
)

// client is the typed way the server calls the editor: every request and
// notification it sends goes through one of these methods. Callers must not
// hold a lock while calling them (a client answers in its own time).
type client struct {
	conn jsonrpc2.Conn
	ctx  context.Context // the connection's lifetime, for notifications
	out  *guardedStream  // the connection's stream, which corks; nil in tests that build a client
	box  *outbox         // its events and progress, bounded (outbox.go); nil in tests that build a client
}

// burst calls send and writes what it sent to the editor at once (one
// write, not one per message). send must not wait for the editor.
func (c *client) burst(send func()) {
	if c.out == nil {
		send()
		return
	}
	c.out.cork()
	defer c.out.uncork()
	send()
}

// Message types of window/showMessage, window/logMessage and showMessageRequest.
const (
	msgError   = protocol.MessageTypeError
	msgWarning = protocol.MessageTypeWarning
	msgInfo    = protocol.MessageTypeInfo
)

// workspaceEdit is a WorkspaceEdit with documentChanges (edits and file
// creations) and change annotations. go.lsp.dev/protocol's union types do not
// encode with encoding/json, so the server sends these small types.
type workspaceEdit struct {
	DocumentChanges   []any                       `json:"documentChanges"`
	ChangeAnnotations map[string]changeAnnotation `json:"changeAnnotations,omitempty"`
}

type textDocumentEdit struct {
	TextDocument versionedDocument `json:"textDocument"`
	Edits        []annotatedEdit   `json:"edits"`
}

// versionedDocument's Version is null for a file the editor does not have open.
type versionedDocument struct {
	URI     string `json:"uri"`
	Version *int32 `json:"version"`
}

type annotatedEdit struct {
	Range        protocol.Range `json:"range"`
	NewText      string         `json:"newText"`
	AnnotationID string         `json:"annotationId,omitempty"`
}

type createFile struct {
	Kind         string            `json:"kind"` // "create"
	URI          string            `json:"uri"`
	Options      createFileOptions `json:"options"`
	AnnotationID string            `json:"annotationId,omitempty"`
}

type createFileOptions struct {
	Overwrite      bool `json:"overwrite"`
	IgnoreIfExists bool `json:"ignoreIfExists"`
}

type changeAnnotation struct {
	Label             string `json:"label"`
	NeedsConfirmation bool   `json:"needsConfirmation"`
	Description       string `json:"description,omitempty"`
}

// applyEditResult is an editor's answer to workspace/applyEdit; the
// headless client adds a note of how it wrote a file (a file rewritten in
// place rather than replaced whole).
type applyEditResult struct {
	protocol.ApplyWorkspaceEditResult
	Note string `json:"note,omitempty"`
}

// applyEdit sends workspace/applyEdit and returns the editor's answer.
func (c *client) applyEdit(ctx context.Context, label string, edit workspaceEdit) (applyEditResult, error) {
	var res applyEditResult
	_, err := c.conn.Call(ctx, "workspace/applyEdit", struct {
		Label string        `json:"label"`
		Edit  workspaceEdit `json:"edit"`
	}{label, edit}, &res)
	return res, err
}

// SaveDocumentsResult is a client's answer to agent/saveDocuments.
type SaveDocumentsResult struct {
	Saved  []string `json:"saved"`
	Failed []struct {
		URI    string `json:"uri"`
		Reason string `json:"reason"`
	} `json:"failed"`
}

// saveDocuments asks the client to save the documents of uris that have
// unsaved changes (agent/saveDocuments; clients that set
// experimental.saveDocuments answer it).
func (c *client) saveDocuments(ctx context.Context, uris []string) (SaveDocumentsResult, error) {
	var res SaveDocumentsResult
	_, err := c.conn.Call(ctx, "agent/saveDocuments", struct {
		URIs []string `json:"uris"`
	}{uris}, &res)
	return res, err
}

// showMessageRequest asks the user to choose one of actions and returns the
// chosen title, or "" when the user dismissed the request.
func (c *client) showMessageRequest(ctx context.Context, typ protocol.MessageType, message string, actions ...string) (string, error) {
	items := make([]protocol.MessageActionItem, len(actions))
	for i, a := range actions {
		items[i] = protocol.MessageActionItem{Title: a}
	}
	var choice *protocol.MessageActionItem
	_, err := c.conn.Call(ctx, "window/showMessageRequest", protocol.ShowMessageRequestParams{Type: typ, Message: message, Actions: items}, &choice)
	if err != nil || choice == nil {
		return "", err
	}
	return choice.Title, nil
}

// showMessage shows a notice the user must act on.
func (c *client) showMessage(typ protocol.MessageType, message string) {
	c.conn.Notify(c.ctx, "window/showMessage", protocol.ShowMessageParams{Type: typ, Message: message})
}

// logMessage writes a line to the editor's log of this server.
func (c *client) logMessage(typ protocol.MessageType, message string) {
	c.conn.Notify(c.ctx, "window/logMessage", protocol.LogMessageParams{Type: typ, Message: message})
}

// createProgress asks the editor for a work-done progress token.
func (c *client) createProgress(ctx context.Context, token json.RawMessage) error {
	_, err := c.conn.Call(ctx, "window/workDoneProgress/create", struct {
		Token json.RawMessage `json:"token"`
	}{token}, nil)
	return err
}

// progressValue is the value of one $/progress notification: begin, report or end.
type progressValue struct {
	Kind        string `json:"kind"`
	Title       string `json:"title,omitempty"`
	Cancellable bool   `json:"cancellable,omitempty"`
	Message     string `json:"message,omitempty"`
}

// progress reports on a work-done progress token.
func (c *client) progress(token json.RawMessage, v progressValue) {
	c.conn.Notify(c.ctx, "$/progress", struct {
		Token json.RawMessage `json:"token"`
		Value progressValue   `json:"value"`
	}{token, v})
}

// event sends one agent/event notification. The event is encoded once, by
// its own MarshalJSON: handed over as a value, jsonrpc2's codec would call
// that method and then validate and copy its output again.
func (c *client) event(e event.Event) {
	if raw, err := e.MarshalJSON(); err == nil { // only an event without data fails, as Notify did
		c.rawEvent(raw)
	}
}

// rawEvent sends one agent/event notification already encoded.
func (c *client) rawEvent(raw []byte) {
	c.conn.Notify(c.ctx, "agent/event", json.RawMessage(raw))
}
