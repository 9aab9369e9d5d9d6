package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// Undo of a rewind (docs/rewind.md). Every rewind keeps a branch of the
// history: what it took out of the conversation (the messages, with their
// IDs, and the checkpoints) and the files it wrote, with their content
// before it (stored like a checkpoint's) and after it. Undo takes the
// session's newest rewind back: the conversation gets its messages and
// checkpoints again, and each file goes back to its content before the
// rewind; a file changed since the rewind is a conflict, as in a rewind.
// The branch then goes: a second undo takes back the rewind before it.

// ErrCannotUndo is wrapped by the error of an undo refused before
// anything changed: no rewind to undo, a conversation changed since, a
// content pruned, a file now outside its project.
var ErrCannotUndo = errors.New("cannot undo the rewind")

// undoable is what a branch keeps for its rewind to be undone.
type undoable struct {
	ID string `json:"id,omitempty"` // the rewind's (its branch's ID)
	// Restore is what the rewind took back: both, conversation or files
	// ("" for a branch of a retry: the conversation).
	Restore string   `json:"restore,omitempty"`
	IDs     []string `json:"ids,omitempty"` // the IDs of Messages
	// Last is the ID of the conversation's last message after the rewind
	// ("": it was empty): an undo needs it still to be the last.
	Last    string          `json:"last,omitempty"`
	Summary json.RawMessage `json:"summary,omitempty"` // the summary the rewind cleared
	Files   []RewoundFile   `json:"files,omitempty"`
}

// RewoundFile is a file a rewind wrote.
type RewoundFile struct {
	Root string `json:"root"`
	Rel  string `json:"rel"`
	// Before is the Hash of its content before the rewind (Existed); After
	// of what the rewind left (Exists; false: it deleted the file).
	Before  string `json:"before,omitempty"`
	Existed bool   `json:"existed,omitempty"`
	After   string `json:"after,omitempty"`
	Exists  bool   `json:"exists,omitempty"`
}

func (b *branch) conversation() bool { return b.Restore != "files" }

// noteConversation records what the conversation holds after the rewind.
func (b *branch) noteConversation(kept []store.Item) {
	if len(kept) > 0 {
		b.Last = kept[len(kept)-1].ID
	}
}

// Rewound records a rewind to checkpoint n of session, which the caller
// checked is not running (Registry.CheckRewindable): restore is what it
// takes back (both, conversation or files), files are the files it wrote,
// as planned (their text before it in Current, after it in Text). The
// conversation is rewound here when restore asks for it. It returns the
// rewind's ID, which UndoRewind takes back.
func (rt *Runtime) Rewound(ctx context.Context, session string, n int, restore string, files []FileRestore) (string, error) {
	b := &branch{undoable: undoable{ID: message.NewID(), Restore: cmp.Or(restore, "both")}}
	for _, f := range files {
		p, ok := rt.cfg.Workspace.ProjectFor(f.Path)
		if !ok {
			continue // (planned within an open project: not reached)
		}
		rf := RewoundFile{Root: p.Root(), Rel: f.Rel, Existed: f.Exists, Exists: !f.Delete}
		if f.Exists {
			rf.Before = tools.Hash(f.Current)
			if err := rt.hist.PutBlob(ctx, session, rf.Before, []byte(f.Current), store.Sync); err != nil {
				return "", err
			}
		}
		if rf.Exists {
			rf.After = tools.Hash(f.Text)
		}
		b.Files = append(b.Files, rf)
	}
	if b.conversation() {
		return b.ID, rt.rewindConversation(ctx, session, n, b)
	}
	b.From, b.Time = n, time.Now().UTC()
	body, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	return b.ID, rt.hist.PutBranch(ctx, session, b.ID, body, store.Sync)
}

// UndoPlan is what undoing a session's newest rewind means. Nothing
// changes until UndoRewind.
type UndoPlan struct {
	ID   string // the rewind's
	From int    // its checkpoint
	// Conversation: the rewind took the conversation back, and the undo
	// brings it again.
	Conversation bool
	// Files are the files it wrote, each to become as before it: Text (or
	// Delete), with Conflict when it changed since the rewind.
	Files []FileRestore
	b     branch
}

// PlanUndo plans the undo of session's newest rewind (which the caller
// checked is not running). A refusal wraps ErrCannotUndo.
func (rt *Runtime) PlanUndo(ctx context.Context, session string) (UndoPlan, error) {
	if _, err := rt.session(ctx, session); err != nil {
		return UndoPlan{}, err
	}
	id, b, err := rt.newestBranch(ctx, session)
	if err != nil {
		return UndoPlan{}, err
	}
	plan := UndoPlan{ID: id, From: b.From, Conversation: b.conversation(), b: b}
	if plan.Conversation {
		if err := rt.checkUndoConversation(ctx, session, b); err != nil {
			return UndoPlan{}, err
		}
	}
	blobs, err := rt.hist.LoadBlobs(ctx, session)
	if err != nil {
		return UndoPlan{}, err
	}
	for _, f := range b.Files {
		r, err := rt.undoFileOf(f, blobs)
		if err != nil {
			return UndoPlan{}, fmt.Errorf("%w to before prompt %d: %w", ErrCannotUndo, b.From, err)
		}
		plan.Files = append(plan.Files, r)
	}
	return plan, nil
}

// newestBranch is session's newest rewind's branch.
func (rt *Runtime) newestBranch(ctx context.Context, session string) (string, branch, error) {
	branches, err := rt.hist.Branches(ctx, session)
	if err != nil {
		return "", branch{}, err
	}
	var id string
	var newest branch
	for k, body := range branches {
		var b branch
		if err := json.Unmarshal(body, &b); err != nil {
			return "", branch{}, fmt.Errorf("rewind %s of session %s: %w: %v", k, session, store.ErrDamaged, err)
		}
		if id == "" || b.Time.After(newest.Time) || (b.Time.Equal(newest.Time) && k > id) {
			id, newest = k, b
		}
	}
	if id == "" {
		return "", branch{}, fmt.Errorf("%w: session %s has no rewind to undo", ErrCannotUndo, session)
	}
	return id, newest, nil
}

// checkUndoConversation refuses the undo of b's conversation when the
// conversation changed since the rewind.
func (rt *Runtime) checkUndoConversation(ctx context.Context, session string, b branch) error {
	if len(b.IDs) != len(b.Messages) {
		return fmt.Errorf("%w to before prompt %d: it was made before rewinds could be undone", ErrCannotUndo, b.From)
	}
	st, err := rt.cfg.Store.Load(ctx, session, "")
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("load session %s: %w", session, err)
	}
	msgs := st.Lists["messages"]
	last := ""
	if len(msgs) > 0 {
		last = msgs[len(msgs)-1].ID
	}
	if last != b.Last {
		return fmt.Errorf("%w to before prompt %d: the conversation went on since (a prompt was sent); fork from checkpoint %d instead", ErrCannotUndo, b.From, b.From)
	}
	return nil
}

// undoFileOf plans one file of an undo: back to its content before the
// rewind.
func (rt *Runtime) undoFileOf(f RewoundFile, blobs *store.Blobs) (FileRestore, error) {
	if !filepath.IsLocal(filepath.FromSlash(f.Rel)) {
		return FileRestore{}, fmt.Errorf("%s: the path leaves its project %s; refused", f.Rel, f.Root)
	}
	p, ok := rt.cfg.Workspace.ProjectAt(f.Root)
	if !ok {
		return FileRestore{}, fmt.Errorf("%s: its project folder %s is not open here", f.Rel, f.Root)
	}
	abs, err := p.Resolve(filepath.Join(f.Root, filepath.FromSlash(f.Rel)))
	if err != nil {
		return FileRestore{}, fmt.Errorf("%s: %v; refused", f.Rel, err)
	}
	r := FileRestore{Path: abs, Rel: f.Rel, Delete: !f.Existed}
	if f.Existed {
		b, err := blobs.Get(f.Before)
		if err != nil {
			return FileRestore{}, fmt.Errorf("%s: %w", f.Rel, err)
		}
		r.Text = string(b)
	}
	r.Current, r.Exists = rt.currentText(p, abs)
	now := ""
	if r.Exists {
		now = tools.Hash(r.Current)
	}
	r.Conflict = (r.Exists != f.Exists || now != f.After) && !r.Unchanged()
	return r, nil
}

// UndoRewind brings back what plan's rewind took out of the conversation
// (the caller restored its files) and drops its branch.
func (rt *Runtime) UndoRewind(ctx context.Context, session string, plan UndoPlan) error {
	b := plan.b
	if plan.Conversation && len(b.IDs) > 0 {
		for _, c := range b.Entries {
			body, err := json.Marshal(c)
			if err == nil {
				err = rt.hist.PutEntry(ctx, session, c.N, body, store.Sync)
			}
			if err != nil {
				return err
			}
		}
		if err := rt.appendBack(ctx, session, b); err != nil {
			return err
		}
	}
	return rt.hist.DeleteBranches(ctx, session, []string{plan.ID}, store.Sync)
}

// appendBack appends b's messages to the session's conversation again.
func (rt *Runtime) appendBack(ctx context.Context, session string, b branch) error {
	sess, err := rt.cfg.Store.Session(ctx, session)
	if err != nil {
		return err
	}
	st, err := rt.cfg.Store.Load(ctx, session, "")
	if err != nil {
		return fmt.Errorf("load session %s: %w", session, err)
	}
	ops := make([]store.Op, len(b.IDs))
	for i, id := range b.IDs {
		ops[i] = store.Op{Kind: store.OpAppend, ID: id, Body: b.Messages[i]}
	}
	values := map[string]json.RawMessage{"runStart": json.RawMessage(`""`)}
	if len(b.Summary) > 0 {
		values["summary"] = b.Summary
	}
	sess.Messages, sess.Updated, sess.Status = len(st.Lists["messages"])+len(ops), time.Now(), store.StatusDone
	return rt.cfg.Store.Put(ctx, store.Checkpoint{Thread: session, Step: st.Step + 1, Status: store.StatusDone,
		Values: values, Lists: map[string][]store.Op{"messages": ops}, Index: &sess, Durability: store.Sync})
}
