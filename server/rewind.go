package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/agent-lsp/agent-lsp/agent"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// The rewind commands (docs/rewind.md): a session's checkpoints (one per
// prompt, the state just before it was sent), rewinding the conversation,
// the files or both to one, and forking a new session from one.

// CheckpointsArgs are agent.checkpoints' arguments.
type CheckpointsArgs struct {
	Session string `json:"session" required:"true"`
}

// CheckpointFile is a file a prompt's run changed.
type CheckpointFile struct {
	Path       string `json:"path"` // relative to its project, with slashes
	URI        string `json:"uri"`
	Added      int    `json:"added"`   // lines
	Removed    int    `json:"removed"` // lines
	Restorable bool   `json:"restorable"`
	Reason     string `json:"reason,omitempty"` // why it is not restorable
}

// CheckpointRow is one checkpoint of agent.checkpoints: the state just
// before prompt Checkpoint was sent, and the files that prompt's run changed.
type CheckpointRow struct {
	Checkpoint int              `json:"checkpoint"`
	Prompt     string           `json:"prompt"` // its first line
	Time       string           `json:"time"`   // RFC 3339
	Model      string           `json:"model"`
	Files      []CheckpointFile `json:"files"`
	// Notes say what the checkpoint could not record: a command's files
	// not looked for (the project was over rewind.scanLimit).
	Notes []string `json:"notes,omitempty"`
}

// CheckpointsResult is agent.checkpoints' result.
type CheckpointsResult struct {
	Checkpoints []CheckpointRow `json:"checkpoints"`
}

// RewindArgs are agent.rewind's arguments.
type RewindArgs struct {
	Session string `json:"session" required:"true"`
	// Checkpoint is required unless Undo.
	Checkpoint int `json:"checkpoint,omitzero"`
	// Restore is both (""), conversation or files.
	Restore string `json:"restore,omitempty"`
	// Undo takes the session's newest rewind back (rewindundo.go), alone.
	Undo bool `json:"undo,omitzero"`
}

func (a RewindArgs) validate() error {
	switch {
	case a.Undo && (a.Checkpoint != 0 || a.Restore != ""):
		return errors.New("undo takes back the newest rewind: give it without checkpoint and restore")
	case !a.Undo && a.Checkpoint <= 0:
		return errors.New("missing required argument \"checkpoint\" (from 1), or undo: true")
	}
	switch a.Restore {
	case "", "both", "conversation", "files":
		return nil
	}
	return fmt.Errorf("restore must be \"both\", \"conversation\" or \"files\", not %q", a.Restore)
}

// FileRef names a file.
type FileRef struct {
	Path string `json:"path"`
	URI  string `json:"uri"`
}

// RewindConflict is a file the user changed after the agent did.
type RewindConflict struct {
	Path string `json:"path"`
	URI  string `json:"uri"`
	Kept bool   `json:"kept"` // the user's version was kept
}

// NotRestorable is a file a rewind could not put back, and why.
type NotRestorable struct {
	Path   string `json:"path"`
	URI    string `json:"uri"`
	Reason string `json:"reason"`
}

// RewindResult is agent.rewind's result.
type RewindResult struct {
	Checkpoint int `json:"checkpoint"`
	// Rewind is the rewind's ID: agent.rewind with undo takes it back
	// (and answers with the ID of the rewind it took back).
	Rewind string `json:"rewind"`
	// Undone: this was an undo; Restored are the files it put back as they
	// were before the rewind, Conversation says the conversation came back.
	Undone bool `json:"undone,omitzero"`
	// Conversation: prompt Checkpoint and what followed left the history.
	Conversation  bool             `json:"conversation"`
	Restored      []FileRef        `json:"restored"`
	Conflicts     []RewindConflict `json:"conflicts"`
	NotRestorable []NotRestorable  `json:"notRestorable"`
}

// CheckpointFileArgs are agent.checkpointFile's arguments.
type CheckpointFileArgs struct {
	Session    string `json:"session" required:"true"`
	Checkpoint int    `json:"checkpoint" required:"true"`
	URI        string `json:"uri" required:"true"`
}

// CheckpointFileResult is agent.checkpointFile's result: a file's content
// at a checkpoint.
type CheckpointFileResult struct {
	Path    string `json:"path"` // relative to its project, with slashes
	URI     string `json:"uri"`
	Exists  bool   `json:"exists"` // false: prompt N or a later one created it
	Content string `json:"content,omitempty"`
}

// ForkArgs are agent.fork's arguments.
type ForkArgs struct {
	Session    string `json:"session" required:"true"`
	Checkpoint int    `json:"checkpoint" required:"true"`
}

// ForkResult is agent.fork's result: the new session.
type ForkResult struct {
	Session string `json:"session"`
}

// rewindCommands are the rewind rows of Commands.
var rewindCommands = []Command{
	command("agent.checkpoints", "Lists a session's checkpoints: one per prompt (agent.run, follow-ups, queued prompts), the state just before it was sent, with the files that prompt's run changed (docs/rewind.md).",
		"`{checkpoints: [{checkpoint, prompt, time, model, files: [{path, uri, added, removed, restorable, reason?}], notes?}]}`; checkpoint counts prompts from 1; prompt is its first line; path is relative to its project; files include those commands changed; reason says why a file is not restorable (changed by a command whose earlier content is unknown, its content was pruned, a name with a control character); notes say what was not recorded (a command's files not looked for: the project was over rewind.scanLimit)",
		(*Server).checkpointsCommand),
	command("agent.rewind", "Returns a session that is not running to checkpoint N (before prompt N): restore both (the default), conversation (prompt N and what followed leave the history, kept in the store as a branch) or files (every file prompts N and later changed is put back, through the editor as one workspace/applyEdit labelled \"Rewind to before prompt N\", or atomically on disk headless). A file the user changed after the agent did is a conflict: the editor is asked (Restore anyway / Keep mine); headless it is kept. Pruned contents and files now outside their project are refused before anything changes. With undo: true (and no checkpoint) it takes the session's newest rewind back: the files it wrote become as before it (one edit labelled \"Undo the rewind to before prompt N\"; a file changed since the rewind is a conflict, as above) and the conversation it took out comes back, refused before anything changes when the conversation went on since (fork instead) or there is no rewind to undo.",
		"`{checkpoint, rewind, undone?, conversation, restored: [{path, uri}], conflicts: [{path, uri, kept}], notRestorable: [{path, uri, reason}]}`; rewind is the rewind's ID (an undo answers the one it took back, with undone: true); conversation says whether the history was rewound (or brought back)",
		(*Server).rewindCommand),
	command("agent.checkpointFile", "A file's content at checkpoint N (before prompt N), for a file prompt N or a later one changed: what a rewind of the files would put back, and the left side of the editors' \"changes since here\". A file no prompt from N on changed, one whose earlier content is unknown or pruned, or one outside its project is refused by name.",
		"`{path, uri, exists, content?}`; exists false: prompt N or a later one created the file", (*Server).checkpointFileCommand),
	command("agent.fork", "Starts a new session whose history is the session's before prompt N (checkpoint N); files are untouched. The new session continues with agent.run and loads with ACP's session/load like any other.",
		"`{session}`: the new session", (*Server).forkCommand),
}

// The user's choices about a file changed since the agent changed it.
const (
	RestoreAnyway = "Restore anyway"
	KeepMine      = "Keep mine"
)

// rewindError turns a rewind's error into the JSON-RPC error command answers.
func rewindError(command string, err error) error {
	if agent.IsRewindError(err) {
		return invalidParams("%s: %v", command, err)
	}
	var pe *rewindRefusal
	if errors.As(err, &pe) {
		return invalidParams("%s: %v", command, err)
	}
	return sessionError(command, err)
}

// rewindRefusal is a rewind refused before anything changed: a file
// outside its project, contents pruned.
type rewindRefusal struct{ err error }

func (e *rewindRefusal) Error() string { return e.err.Error() }

func (s *Server) checkpointsCommand(ctx context.Context, call commandCall, a CheckpointsArgs) (CheckpointsResult, error) {
	rt := call.b.Runtime
	cps, err := rt.Checkpoints(ctx, a.Session)
	if err != nil {
		return CheckpointsResult{}, rewindError("agent.checkpoints", err)
	}
	blobs, err := rt.History().LoadBlobs(ctx, a.Session)
	if err != nil {
		return CheckpointsResult{}, jsonrpc2.Errorf(jsonrpc2.InternalError, "agent.checkpoints: %v", err)
	}
	return CheckpointRows(cps, blobs), nil
}

// CheckpointRows is agent.checkpoints' result for cps, whose contents
// blobs holds (agent-lsp sessions checkpoints prints the same).
func CheckpointRows(cps []agent.Checkpoint, blobs *store.Blobs) CheckpointsResult {
	out := CheckpointsResult{Checkpoints: []CheckpointRow{}}
	for _, c := range cps {
		row := CheckpointRow{Checkpoint: c.N, Prompt: c.FirstLine(), Time: c.Time.UTC().Format(time.RFC3339), Model: c.Model, Files: []CheckpointFile{}, Notes: c.Notes}
		for _, f := range c.Files {
			ok, why := f.Restorable(blobs)
			row.Files = append(row.Files, CheckpointFile{Path: f.Rel, URI: string(uri.File(f.Path())), Added: f.Added, Removed: f.Removed, Restorable: ok, Reason: why})
		}
		out.Checkpoints = append(out.Checkpoints, row)
	}
	return out
}

func (s *Server) rewindCommand(ctx context.Context, call commandCall, a RewindArgs) (RewindResult, error) {
	jsonrpc2.Async(ctx) // it waits for the editor's answers (applyEdit, a conflict's question): the connection reads on
	if a.Undo {
		return s.undoRewind(ctx, call, a.Session)
	}
	rt := call.b.Runtime
	res := RewindResult{Checkpoint: a.Checkpoint, Restored: []FileRef{}, Conflicts: []RewindConflict{}, NotRestorable: []NotRestorable{}}
	files := a.Restore != "conversation"
	err := call.b.Live().CheckRewindable(ctx, rt, a.Session, func() error {
		var plan []agent.FileRestore
		if files {
			var err error
			if plan, err = rt.PlanRewind(ctx, a.Session, a.Checkpoint); err != nil {
				if agent.IsRewindError(err) {
					return err
				}
				return &rewindRefusal{err}
			}
		} else if _, err := rt.PlanRewind(ctx, a.Session, a.Checkpoint); agent.IsRewindError(err) {
			return err // an unknown checkpoint, named
		}
		written, err := s.restoreFiles(ctx, call.b, restoreAsk{label: fmt.Sprintf("Rewind to before prompt %d", a.Checkpoint)}, plan, &res)
		if err != nil {
			return err
		}
		res.Rewind, err = rt.Rewound(ctx, a.Session, a.Checkpoint, a.Restore, written)
		res.Conversation = err == nil && a.Restore != "files"
		return err
	})
	if err != nil {
		return RewindResult{}, rewindError("agent.rewind", err)
	}
	return res, nil
}

func (s *Server) checkpointFileCommand(ctx context.Context, call commandCall, a CheckpointFileArgs) (CheckpointFileResult, error) {
	plan, err := call.b.Runtime.PlanRewind(ctx, a.Session, a.Checkpoint)
	if err != nil {
		return CheckpointFileResult{}, rewindError("agent.checkpointFile", err)
	}
	want := filepath.Clean(filename(a.URI))
	for _, f := range plan {
		if filepath.Clean(f.Path) != want {
			continue
		}
		if f.Reason != "" {
			return CheckpointFileResult{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "agent.checkpointFile: %s: %s", f.Rel, f.Reason)
		}
		return CheckpointFileResult{Path: f.Rel, URI: string(uri.File(f.Path)), Exists: !f.Delete, Content: f.Text}, nil
	}
	return CheckpointFileResult{}, jsonrpc2.Errorf(jsonrpc2.InvalidParams, "agent.checkpointFile: %s: no prompt of session %s from %d on changed it", a.URI, a.Session, a.Checkpoint)
}

func (s *Server) forkCommand(ctx context.Context, call commandCall, a ForkArgs) (ForkResult, error) {
	if _, err := storedSession(ctx, call.b, "agent.fork", a.Session); err != nil {
		return ForkResult{}, err
	}
	id, err := call.b.Runtime.Fork(ctx, a.Session, a.Checkpoint)
	if err != nil {
		return ForkResult{}, rewindError("agent.fork", err)
	}
	return ForkResult{Session: id}, nil
}

// restoreAsk words a restore's edit and its conflicts' question.
type restoreAsk struct {
	label string // the edit's label, which the question names
	since string // since what a conflict's file changed; "" after the agent changed it
}

// restoreFiles puts plan's files back through the editor, as one labelled
// workspace/applyEdit; a conflict is asked about first (headless: kept).
// It returns the files it wrote.
func (s *Server) restoreFiles(ctx context.Context, b *Backend, ask restoreAsk, plan []agent.FileRestore, res *RewindResult) ([]agent.FileRestore, error) {
	var restore []agent.FileRestore
	for _, f := range plan {
		ref := FileRef{Path: f.Rel, URI: string(uri.File(f.Path))}
		switch {
		case f.Reason != "":
			res.NotRestorable = append(res.NotRestorable, NotRestorable{Path: ref.Path, URI: ref.URI, Reason: f.Reason})
			continue
		case f.Unchanged():
			res.Restored = append(res.Restored, ref)
			continue
		case f.Conflict:
			choice, err := s.client.showMessageRequest(ctx, msgWarning, fmt.Sprintf("%s changed %s. %s: restore it anyway (your changes are lost), or keep yours?", f.Rel, cmp.Or(ask.since, "after the agent changed it"), ask.label), RestoreAnyway, KeepMine)
			kept := err != nil || choice != RestoreAnyway
			res.Conflicts = append(res.Conflicts, RewindConflict{Path: ref.Path, URI: ref.URI, Kept: kept})
			if kept {
				continue
			}
		}
		restore = append(restore, f)
		res.Restored = append(res.Restored, ref)
	}
	if len(restore) == 0 {
		return nil, nil
	}
	edit := rewindEdit(b, ask.label, restore)
	out, err := s.client.applyEdit(ctx, edit)
	if err != nil {
		return nil, fmt.Errorf("workspace/applyEdit: %w", err)
	}
	if !out.Applied {
		why := "no reason given"
		if out.FailureReason != nil {
			why = *out.FailureReason
		}
		return nil, fmt.Errorf("the editor did not apply the edit %q (%s); nothing changed", ask.label, why)
	}
	return restore, nil
}

// rewindEdit is one WorkspaceEdit that makes every file of restore as
// at the checkpoint: its whole text replaced, created or deleted; a
// protected file's change carries the confirmation its edits need.
func rewindEdit(b *Backend, label string, restore []agent.FileRestore) *protocol.ApplyWorkspaceEditParams {
	const confirm = "agent-lsp.rewind.protected"
	var changes []protocol.DocumentChange
	var why string
	for _, f := range restore {
		u := uri.File(f.Path)
		var annotation protocol.ChangeAnnotationIdentifier
		if _, d, err := b.Workspace.Decide(f.Path); err != nil || d.Review(b.AllowEdit) != "" {
			annotation = confirm
			if err == nil {
				why = d.Review(b.AllowEdit)
			} else {
				why = err.Error()
			}
		}
		if f.Delete {
			changes = append(changes, &protocol.DeleteFile{Kind: "delete", URI: u, ResourceOperation: protocol.ResourceOperation{AnnotationID: annotation}})
			continue
		}
		var version *int32
		if d, open := b.Workspace.Document(f.Path); open {
			v := d.Version
			version = &v
		}
		if !f.Exists {
			changes = append(changes, &protocol.CreateFile{Kind: "create", URI: u, Options: &protocol.CreateFileOptions{Overwrite: new(false), IgnoreIfExists: new(false)},
				ResourceOperation: protocol.ResourceOperation{AnnotationID: annotation}})
		}
		end := workspace.PositionOf(f.Current, len(f.Current), b.Workspace.Encoding())
		edit := protocol.TextEdit{Range: lspRange(workspace.Range{End: end}), NewText: f.Text}
		var el protocol.TextDocumentEditElement = &edit
		if annotation != "" {
			el = &protocol.AnnotatedTextEdit{TextEdit: edit, AnnotationID: annotation}
		}
		doc := protocol.OptionalVersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: version}
		changes = append(changes, &protocol.TextDocumentEdit{TextDocument: doc, Edits: []protocol.TextDocumentEditElement{el}})
	}
	we := protocol.WorkspaceEdit{DocumentChanges: changes}
	if why != "" {
		we.ChangeAnnotations = map[protocol.ChangeAnnotationIdentifier]protocol.ChangeAnnotation{
			confirm: {Label: label, NeedsConfirmation: new(true), Description: &why},
		}
	}
	return &protocol.ApplyWorkspaceEditParams{Label: &label, Edit: we}
}
