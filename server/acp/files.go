package acp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/coder/acp-go-sdk"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/server/session"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// acpEditor is a prompt's editor port over ACP: files are read through the
// client (fs/read_text_file, the editor's unsaved text) when it offers it,
// and edits written through it (fs/write_text_file) when it offers that,
// else on disk inside the project. In review mode each edit is shown as a
// diff and written only once the user allows it (session/request_permission).
type acpEditor struct {
	conn      *acp.AgentSideConnection
	caps      acp.FileSystemCapabilities
	ws        *workspace.Workspace
	session   *acpSession
	review    bool
	allowEdit []workspace.Rule
	updates   *acpUpdates
}

var (
	_ tools.Editor     = (*acpEditor)(nil)
	_ tools.TextReader = (*acpEditor)(nil)
)

// ReadText implements tools.TextReader: the client's text of the file, when
// it reads files for the agent and has this one.
func (e *acpEditor) ReadText(ctx context.Context, path string) (string, bool, error) {
	if !e.caps.ReadTextFile {
		return "", false, nil
	}
	res, err := e.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: acp.SessionId(e.session.id), Path: path})
	if err != nil {
		if ctx.Err() != nil {
			return "", false, ctx.Err()
		}
		return "", false, nil // the client does not have it (a new file): the disk says why
	}
	return res.Content, true, nil
}

// Edit implements tools.Editor: the edit applied to the file's current
// text, shown to the client as a diff of the tool call it belongs to, and
// written (after the user's yes in review mode, and for a protected file
// the settings do not allow).
func (e *acpEditor) Edit(ctx context.Context, fe tools.FileEdit) (tools.EditResult, error) {
	p, ok := e.ws.ProjectFor(fe.Path)
	if !ok {
		return tools.EditResult{FailureReason: fe.Path + " is outside every project"}, nil
	}
	old, existed, err := e.current(ctx, p, fe.Path)
	if err != nil {
		return tools.EditResult{}, err
	}
	if fe.Create && existed && old != "" {
		return tools.EditResult{FailureReason: fe.Rel + " exists already"}, nil
	}
	changes := make([]workspace.Change, 0, len(fe.Edits))
	for i := len(fe.Edits) - 1; i >= 0; i-- { // the edits' ranges refer to the text before all of them
		r := fe.Edits[i].Range
		changes = append(changes, workspace.Change{Range: &r, Text: fe.Edits[i].NewText})
	}
	text, err := workspace.ApplyChanges(old, changes, workspace.UTF8)
	if err != nil {
		return tools.EditResult{FailureReason: err.Error()}, nil
	}
	diff := acp.ToolDiffContent(fe.Path, text)
	if existed {
		diff = acp.ToolDiffContent(fe.Path, text, old)
	}
	callID, _ := e.session.calls.find(func(c *acpCall) bool {
		return (c.name == "edit_file" || c.name == "create_file") && e.updates.abs(fmt.Sprint(c.args["path"]), c.args) == fe.Path
	})
	d, err := session.Decided(e.ws, fe)
	if err != nil {
		return tools.EditResult{FailureReason: err.Error()}, nil
	}
	if why := e.confirmation(d); why != "" {
		ok, err := e.ask(ctx, callID, fe, why, diff)
		if err != nil {
			return tools.EditResult{}, err
		}
		if !ok {
			return tools.EditResult{FailureReason: "the user rejected the edit"}, nil
		}
	}
	if why := e.moved(d); why != "" {
		return tools.EditResult{FailureReason: why}, nil
	}
	note, err := e.write(ctx, p, fe.Path, text)
	if err != nil {
		return tools.EditResult{FailureReason: err.Error()}, nil
	}
	if callID != "" {
		e.session.calls.addContent(callID, diff)
		e.updates.send(acp.UpdateToolCall(acp.ToolCallId(callID), acp.WithUpdateContent([]acp.ToolCallContent{diff})))
	}
	return tools.EditResult{Applied: true, Note: note}, nil
}

// current is the text an edit applies to: the client's, else the disk's.
func (e *acpEditor) current(ctx context.Context, p *workspace.Project, path string) (text string, existed bool, err error) {
	if t, ok, err := e.ReadText(ctx, path); err != nil || ok {
		return t, ok, err
	}
	b, err := e.ws.ReadFile(p, path, workspace.MaxReadSize)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	return string(b), err == nil, err
}

// write writes text through the client when it writes files, else on disk
// (replacing the file whole: workspace.WriteAtomic); note says how a file
// on disk was written when it is worth telling ("" otherwise).
func (e *acpEditor) write(ctx context.Context, p *workspace.Project, path, text string) (note string, err error) {
	if e.caps.WriteTextFile {
		_, err := e.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: acp.SessionId(e.session.id), Path: path, Content: text})
		if err != nil {
			return "", fmt.Errorf("the client could not write %s: %w", p.Rel(path), err)
		}
		return "", nil
	}
	w, err := p.WriteFile(path, []byte(text))
	return w.Note(), err
}

// confirmation says why an edit of the path d decided needs the user's yes
// ("" for none).
func (e *acpEditor) confirmation(d workspace.Decision) string {
	if why := d.Review(e.allowEdit); why != "" {
		return why
	}
	if e.review {
		return "review mode"
	}
	return ""
}

// moved decides the edit's path again just before it is written, and says
// why it is not written when the path no longer is what was decided (and
// maybe shown to the user): it leads elsewhere now (a folder swapped for a
// symlink while the question was open), or the file gained hard links.
func (e *acpEditor) moved(d workspace.Decision) string {
	_, now, err := e.ws.Decide(d.Abs)
	switch {
	case err != nil:
		return fmt.Sprintf("not written: %v", err)
	case now.Real != d.Real:
		return fmt.Sprintf("not written: %s led to %s when it was decided, and leads to %s now", d.Rel, d.RealRel, now.RealRel)
	case now.Links > 1 && d.Links <= 1:
		return fmt.Sprintf("not written: %s gained hard links while the edit waited", d.Rel)
	}
	return ""
}

// ask asks whether to write an edit, showing its diff.
func (e *acpEditor) ask(ctx context.Context, callID string, fe tools.FileEdit, why string, diff acp.ToolCallContent) (bool, error) {
	// The edit's own tool call gets its diff as content (what the call will
	// show anyway) and why it asks (the file a link really leads to), and
	// keeps its title; an edit without one gets its own call.
	content := []acp.ToolCallContent{diff, acp.ToolContent(acp.TextBlock(why))}
	call := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(callID), Content: content}
	if callID == "" {
		call = acp.ToolCallUpdate{ToolCallId: acp.ToolCallId("edit-" + fe.Rel), Title: ptr(fmt.Sprintf("%s (%s)", fe.Label, why)),
			Kind: ptr(acp.ToolKindEdit), Locations: []acp.ToolCallLocation{{Path: fe.Path}}, Content: content}
	}
	resp, err := e.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: acp.SessionId(e.session.id), ToolCall: call,
		Options: []acp.PermissionOption{
			{OptionId: "apply", Name: "Apply", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		}})
	if err != nil {
		return false, err
	}
	return resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == "apply", nil
}

// Save implements tools.Editor: what the agent wrote is on disk when the
// disk holds the client's text of it; a client that keeps writes in its
// buffers leaves them unsaved, and the command's result says so.
func (e *acpEditor) Save(ctx context.Context, paths []string) (tools.SaveResult, error) {
	out := tools.SaveResult{Failed: map[string]string{}}
	for _, path := range slices.Sorted(slices.Values(paths)) {
		text, ok, err := e.ReadText(ctx, path)
		if err != nil {
			return tools.SaveResult{}, err
		}
		disk, derr := os.ReadFile(path)
		switch {
		case !ok || (derr == nil && string(disk) == text):
			out.Saved = append(out.Saved, path)
		default:
			out.Failed[path] = "the client holds it unsaved (ACP has no request to save a file)"
		}
	}
	return out, nil
}
