package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// reviewAnnotation is the change annotation of edits that need confirmation.
const reviewAnnotation = "agent-lsp.review"

// editor is a run's Editor port: every change is a workspace/applyEdit. An
// edit needs the user's confirmation (a change annotation with
// needsConfirmation) in review mode, and in any mode for a protected file
// the settings do not allow; those wait in line, one at a time.
type editor struct {
	c         *client
	ws        *workspace.Workspace
	review    bool             // every edit needs confirmation
	allowEdit []workspace.Rule // protected files that need none
	before    func()           // sends the run's queued events before the edit
	line      *fifo            // edits waiting for a confirmation: one per connection, so one is on screen at a time
	saves     bool             // the client answers agent/saveDocuments
}

// Save implements tools.Editor: agent/saveDocuments for the paths, when the
// client can save. Saved documents are marked clean at once (their didSave
// may come later).
func (e *editor) Save(ctx context.Context, paths []string) (tools.SaveResult, error) {
	if !e.saves {
		return tools.SaveResult{}, tools.ErrSaveUnsupported
	}
	uris := make([]string, len(paths))
	for i, p := range paths {
		uris[i] = string(uri.File(p))
	}
	e.before()
	res, err := e.c.saveDocuments(ctx, uris)
	if err != nil {
		return tools.SaveResult{}, fmt.Errorf("agent/saveDocuments: %w", err)
	}
	out := tools.SaveResult{Failed: map[string]string{}}
	for _, u := range res.Saved {
		p := filename(u)
		if !e.onDisk(ctx, p) {
			out.Failed[p] = "the editor answered that it saved it, but the file on disk does not have the editor's text"
			continue
		}
		out.Saved = append(out.Saved, p)
	}
	for _, f := range res.Failed {
		out.Failed[filename(f.URI)] = f.Reason
	}
	return out, nil
}

// saveSettle is how long a document the client says it saved may take to
// show its text on disk: the write may still be on its way (a remote file
// system), or the client's didChange of the edit may not have arrived yet.
const saveSettle = 5 * time.Second

// onDisk waits, up to saveSettle, until the disk holds the text of the
// document at path as the server has it, and reports whether it does.
func (e *editor) onDisk(ctx context.Context, path string) bool {
	deadline := time.Now().Add(saveSettle)
	for !e.ws.Saved(path) {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return true
}

// Edit implements tools.Editor.
func (e *editor) Edit(ctx context.Context, fe tools.FileEdit) (tools.EditResult, error) {
	why := e.confirmation(fe)
	if why != "" {
		behind, err := e.line.lock(ctx)
		if err != nil {
			return tools.EditResult{}, err
		}
		defer e.line.unlock()
		if behind > 0 {
			why += fmt.Sprintf(" (1 of %d)", behind+1) // the editors show the queue
		}
	}
	e.before()
	res, err := e.c.applyEdit(ctx, e.workspaceEdit(fe, why))
	if err != nil {
		return tools.EditResult{}, fmt.Errorf("workspace/applyEdit: %w", err)
	}
	out := tools.EditResult{Applied: res.Applied, Note: res.Note}
	if res.FailureReason != nil {
		out.FailureReason = *res.FailureReason
	}
	return out, nil
}

// confirmation says why an edit needs the user's confirmation, "" if it
// needs none: its path as decided (a protected name allowEdit does not
// match, hard links), and review mode.
func (e *editor) confirmation(fe tools.FileEdit) string {
	d, err := session.Decided(e.ws, fe)
	if err != nil {
		return err.Error() + "; accept or reject"
	}
	if why := d.Review(e.allowEdit); why != "" {
		return why + "; accept or reject"
	}
	if e.review {
		return "proposed by agent-lsp; accept or reject"
	}
	return ""
}

// workspaceEdit turns a file edit into workspace/applyEdit's params: a
// TextDocumentEdit with the version the edit was computed against (null
// for a file the editor has not open), after a CreateFile for a new file;
// with a confirmation annotation when why is set.
func (e *editor) workspaceEdit(fe tools.FileEdit, why string) *protocol.ApplyWorkspaceEditParams {
	u := uri.File(fe.Path)
	var annotation protocol.ChangeAnnotationIdentifier
	if why != "" {
		annotation = reviewAnnotation
	}
	var changes []protocol.DocumentChange
	var version *int32
	if fe.Create {
		changes = append(changes, &protocol.CreateFile{Kind: "create", URI: u, Options: &protocol.CreateFileOptions{Overwrite: new(false), IgnoreIfExists: new(false)},
			ResourceOperation: protocol.ResourceOperation{AnnotationID: annotation}})
	} else if fe.Open {
		v := fe.Version // the version the edit's ranges refer to: an editor whose buffer moved on refuses it
		version = &v
	}
	edits := make([]protocol.TextDocumentEditElement, 0, len(fe.Edits))
	for _, te := range fe.Edits {
		edit := protocol.TextEdit{Range: lspRange(te.Range), NewText: te.NewText}
		if annotation == "" {
			edits = append(edits, &edit)
		} else {
			edits = append(edits, &protocol.AnnotatedTextEdit{TextEdit: edit, AnnotationID: annotation})
		}
	}
	doc := protocol.OptionalVersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: version}
	we := protocol.WorkspaceEdit{DocumentChanges: append(changes, &protocol.TextDocumentEdit{TextDocument: doc, Edits: edits})}
	if why != "" {
		we.ChangeAnnotations = map[protocol.ChangeAnnotationIdentifier]protocol.ChangeAnnotation{
			reviewAnnotation: {Label: fe.Label, NeedsConfirmation: new(true), Description: &why},
		}
	}
	return &protocol.ApplyWorkspaceEditParams{Label: &fe.Label, Edit: we}
}

func lspRange(r workspace.Range) protocol.Range {
	return protocol.Range{
		Start: protocol.Position{Line: r.Start.Line, Character: r.Start.Character},
		End:   protocol.Position{Line: r.End.Line, Character: r.End.Character},
	}
}

// fifo is a lock granted in the order it was asked for, so edits waiting
// for a confirmation reach the user one at a time, in the order the agents
// made them. A connection has one: its runs' confirmations share the queue.
type fifo struct {
	mu      sync.Mutex      // guards held and waiting
	held    bool            // someone holds the lock
	waiting []chan struct{} // closed, in order, to hand the lock on
}

// lock waits for the lock and returns how many wait behind it then; it
// gives up with ctx's error.
func (f *fifo) lock(ctx context.Context) (behind int, err error) {
	f.mu.Lock()
	if !f.held {
		f.held = true
		f.mu.Unlock()
		return 0, nil
	}
	turn := make(chan struct{})
	f.waiting = append(f.waiting, turn)
	f.mu.Unlock()
	select {
	case <-turn:
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.waiting), nil
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, w := range f.waiting {
			if w == turn {
				f.waiting = append(f.waiting[:i], f.waiting[i+1:]...)
				return 0, ctx.Err()
			}
		}
		// The lock was handed to us as we gave up: pass it on.
		f.handOn()
		return 0, ctx.Err()
	}
}

func (f *fifo) unlock() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handOn()
}

// handOn gives the lock to the next in line, or frees it. f.mu is held.
func (f *fifo) handOn() {
	if len(f.waiting) == 0 {
		f.held = false
		return
	}
	next := f.waiting[0]
	f.waiting = f.waiting[1:]
	close(next)
}
