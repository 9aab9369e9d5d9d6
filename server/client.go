package server

import (
	"context"
	"encoding/json"
	"fmt"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
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

// applyEditResult is an editor's answer to workspace/applyEdit; the
// headless client adds a note of how it wrote a file (a file rewritten in
// place rather than replaced whole), agent-lsp's own field.
type applyEditResult struct {
	protocol.ApplyWorkspaceEditResult
	Note string
}

// applyEdit sends workspace/applyEdit and returns the editor's answer.
func (c *client) applyEdit(ctx context.Context, params *protocol.ApplyWorkspaceEditParams) (applyEditResult, error) {
	var raw jsonrpc2.RawMessage
	if _, err := c.conn.Call(ctx, protocol.MethodWorkspaceApplyEdit, params, &raw); err != nil {
		return applyEditResult{}, err
	}
	return decodeApplyEditResult(raw)
}

// decodeApplyEditResult decodes an answer to workspace/applyEdit in two
// parts: LSP's fields with the library's codec, then the note. One struct
// that embeds protocol.ApplyWorkspaceEditResult cannot decode both: the
// embedded type's UnmarshalJSONFrom is promoted to the struct and decodes
// the whole object, dropping the note (TestApplyEditResultKeepsTheNote).
func decodeApplyEditResult(raw []byte) (applyEditResult, error) {
	var res applyEditResult
	if len(raw) == 0 || string(raw) == "null" {
		return res, nil
	}
	if err := protocol.Unmarshal(raw, &res.ApplyWorkspaceEditResult); err != nil {
		return res, fmt.Errorf("the editor's answer: %w", err)
	}
	var ext struct {
		Note string `json:"note"`
	}
	json.Unmarshal(raw, &ext) // a note of the wrong type is no note
	res.Note = ext.Note
	return res, nil
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
	_, err := c.conn.Call(ctx, protocol.MethodWindowShowMessageRequest, &protocol.ShowMessageRequestParams{Type: typ, Message: message, Actions: items}, &choice)
	if err != nil || choice == nil {
		return "", err
	}
	return choice.Title, nil
}

// showMessage shows a notice the user must act on.
func (c *client) showMessage(typ protocol.MessageType, message string) {
	c.conn.Notify(c.ctx, protocol.MethodWindowShowMessage, &protocol.ShowMessageParams{Type: typ, Message: message})
}

// logMessage writes a line to the editor's log of this server.
func (c *client) logMessage(typ protocol.MessageType, message string) {
	c.conn.Notify(c.ctx, protocol.MethodWindowLogMessage, &protocol.LogMessageParams{Type: typ, Message: message})
}

// createProgress asks the editor for a work-done progress token.
func (c *client) createProgress(ctx context.Context, token protocol.ProgressToken) error {
	_, err := c.conn.Call(ctx, protocol.MethodWindowWorkDoneProgressCreate, &protocol.WorkDoneProgressCreateParams{Token: token}, nil)
	return err
}

// progress reports on a work-done progress token; value is a progressBegin,
// progressReport or progressEnd.
func (c *client) progress(token protocol.ProgressToken, value protocol.LSPAny) {
	c.conn.Notify(c.ctx, protocol.MethodProgress, &protocol.ProgressParams{Token: token, Value: value})
}

// progressBegin is the value of the $/progress that begins a run's progress.
func progressBegin(title string) protocol.LSPAny {
	return workDone(&protocol.WorkDoneProgressBegin{Kind: "begin", Title: title, Cancellable: new(true)})
}

// progressReport is the value of a $/progress that reports msg.
func progressReport(msg string) protocol.LSPAny {
	return workDone(&protocol.WorkDoneProgressReport{Kind: "report", Message: optionalText(msg)})
}

// progressEnd is the value of the $/progress that ends progress with msg.
func progressEnd(msg string) protocol.LSPAny {
	return workDone(&protocol.WorkDoneProgressEnd{Kind: "end", Message: optionalText(msg)})
}

// workDone encodes a work-done progress value ($/progress's value is LSPAny).
// These types have no field that can fail to encode.
func workDone(v any) protocol.LSPAny {
	raw, _ := protocol.Marshal(v)
	return raw
}

// optionalText is s, or nil (the field left out) when s is empty.
func optionalText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// rawEvent sends one agent/event notification already encoded.
func (c *client) rawEvent(raw []byte) {
	c.conn.Notify(c.ctx, "agent/event", jsonrpc2.RawMessage(raw))
}
