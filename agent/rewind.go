package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/message"
	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
	"github.com/agent-lsp/agent-lsp/workspace"
)

// FileRestore is one file of a rewind: what it becomes.
type FileRestore struct {
	Path string // absolute
	Rel  string // relative to its project, with slashes
	// Text is its content at the checkpoint; Delete: it did not exist then.
	Text   string
	Delete bool
	// Exists: it exists now; Current is its text now (the editor's, else
	// the disk's).
	Exists  bool
	Current string
	// Conflict: it is neither what the agent left nor the checkpoint's: the
	// user (or a command) changed it after the agent did.
	Conflict bool
	// Reason, when set, says why it cannot be restored (and it is not).
	Reason string
}

// Unchanged reports whether the file already is as at the checkpoint.
func (f FileRestore) Unchanged() bool {
	return f.Reason == "" && ((f.Delete && !f.Exists) || (!f.Delete && f.Exists && f.Current == f.Text))
}

// checkpointOf returns checkpoint n of session's history, with the later
// ones (n included).
func (rt *Runtime) checkpointOf(ctx context.Context, session string, n int) (Checkpoint, []Checkpoint, error) {
	cps, err := rt.Checkpoints(ctx, session)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	for i, c := range cps {
		if c.N == n {
			return c, cps[i:], nil
		}
	}
	return Checkpoint{}, nil, fmt.Errorf("%w %d of session %s (it has %d)", ErrUnknownCheckpoint, n, session, len(cps))
}

// PlanRewind is what putting session's files back to checkpoint n means:
// every file prompts n and later changed, as it was before the first of
// them changed it. Nothing changes. A file whose project is not open here,
// or whose path leaves its project, and contents pruned from the history
// are errors naming the file.
func (rt *Runtime) PlanRewind(ctx context.Context, session string, n int) ([]FileRestore, error) {
	_, later, err := rt.checkpointOf(ctx, session, n)
	if err != nil {
		return nil, err
	}
	blobs, err := rt.hist.LoadBlobs(ctx, session)
	if err != nil {
		return nil, err
	}
	first := map[string]FileChange{} // the first change of each file, from n on
	last := map[string]FileChange{}
	var order []string
	for _, c := range later {
		for _, f := range c.Files {
			k := f.Path()
			if _, ok := first[k]; !ok {
				first[k] = f
				order = append(order, k)
			}
			last[k] = f
		}
	}
	var out []FileRestore
	for _, k := range order {
		r, err := rt.restoreOf(first[k], last[k], blobs)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %d of session %s: %w", n, session, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// restoreOf plans one file: first and last are its first and last change
// since the checkpoint.
func (rt *Runtime) restoreOf(first, last FileChange, blobs *store.Blobs) (FileRestore, error) {
	if !filepath.IsLocal(filepath.FromSlash(first.Rel)) {
		return FileRestore{}, fmt.Errorf("%s: the path leaves its project %s; refused", first.Rel, first.Root)
	}
	p, ok := rt.cfg.Workspace.ProjectAt(first.Root)
	if !ok {
		return FileRestore{}, fmt.Errorf("%s: its project folder %s is not open here", first.Rel, first.Root)
	}
	abs, err := p.Resolve(first.Path())
	if err != nil {
		return FileRestore{}, fmt.Errorf("%s: %v; refused", first.Rel, err)
	}
	r := FileRestore{Path: abs, Rel: first.Rel, Delete: first.Created}
	if r.Reason = badName(first.Rel); r.Reason != "" {
		return r, nil
	}
	if ok, why := first.Restorable(blobs); !ok {
		if why == ReasonPruned {
			return FileRestore{}, fmt.Errorf("%s: %s", first.Rel, why)
		}
		r.Reason = why
		return r, nil
	}
	if !first.Created {
		b, err := blobs.Get(first.Before)
		if err != nil {
			return FileRestore{}, fmt.Errorf("%s: %w", first.Rel, err)
		}
		r.Text = string(b)
	}
	r.Current, r.Exists = rt.currentText(p, abs)
	now := ""
	if r.Exists {
		now = tools.Hash(r.Current)
	}
	r.Conflict = now != last.After && !r.Unchanged()
	return r, nil
}

// currentText is a file's text as the editor has it, else the disk's.
func (rt *Runtime) currentText(p *workspace.Project, abs string) (string, bool) {
	if d, open := rt.cfg.Workspace.Document(abs); open {
		return d.Text, true
	}
	if _, err := os.Lstat(abs); err != nil {
		return "", false
	}
	b, err := rt.cfg.Workspace.ReadFile(p, abs, workspace.MaxReadSize)
	if err != nil {
		return "", true
	}
	return string(b), true
}

// CheckRewindable refuses a session that runs: here (the Live registry),
// or on another machine (a shared store's lease, which it holds while fn
// runs).
func (g *Registry) CheckRewindable(ctx context.Context, rt *Runtime, session string, fn func() error) error {
	if g.Running(session) {
		return errBusy(session)
	}
	if _, err := rt.session(ctx, session); err != nil {
		return err
	}
	release, err := rt.cfg.Store.Acquire(ctx, session, time.Minute, func() {})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSessionBusy, err)
	}
	defer release()
	if g.Running(session) {
		return errBusy(session)
	}
	return fn()
}

// branch is what a conversation rewind took out of the history: kept so
// that the rewind can be undone.
type branch struct {
	From     int               `json:"from"`
	Time     time.Time         `json:"time"`
	Messages []json.RawMessage `json:"messages"`
	Entries  []Checkpoint      `json:"checkpoints"`
	undoable                   // undo.go
}

// RewindConversation takes prompt n and everything after it out of the
// session's conversation (the caller checked it is not running:
// Registry.CheckRewindable). What it takes out is kept as a branch of the history.
func (rt *Runtime) RewindConversation(ctx context.Context, session string, n int) error {
	return rt.rewindConversation(ctx, session, n, &branch{})
}

// rewindConversation is RewindConversation, keeping b (with what it took
// out) as the branch.
func (rt *Runtime) rewindConversation(ctx context.Context, session string, n int, b *branch) error {
	c, later, err := rt.checkpointOf(ctx, session, n)
	if err != nil {
		return err
	}
	sess, err := rt.cfg.Store.Session(ctx, session)
	if err != nil {
		return err
	}
	st, err := rt.cfg.Store.Load(ctx, session, "")
	if err != nil {
		return fmt.Errorf("load session %s: %w", session, err)
	}
	msgs := st.Lists["messages"]
	idx := indexOf(msgs, c.Message)
	if idx < 0 {
		return fmt.Errorf("checkpoint %d of session %s: its prompt is not in the conversation any more", n, session)
	}
	gone := map[string]bool{}
	b.From, b.Time, b.Entries = n, time.Now().UTC(), later
	b.noteConversation(msgs[:idx])
	var ops []store.Op
	for _, it := range msgs[idx:] {
		gone[it.ID] = true
		ops = append(ops, store.Op{Kind: store.OpRemove, ID: it.ID})
		b.Messages = append(b.Messages, it.Body)
		b.IDs = append(b.IDs, it.ID)
	}
	values := map[string]json.RawMessage{"runStart": json.RawMessage(`""`)}
	var sum Summary
	if json.Unmarshal(st.Values["summary"], &sum) == nil && gone[sum.UpTo] {
		values["summary"] = json.RawMessage(`{"text":"","upTo":""}`)
		b.Summary = st.Values["summary"]
	}
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	if err := rt.hist.DropEntries(ctx, session, n, cmp.Or(b.ID, message.NewID()), body, store.Sync); err != nil {
		return err
	}
	sess.Messages, sess.Updated, sess.Status = idx, time.Now(), store.StatusDone
	return rt.cfg.Store.Put(ctx, store.Checkpoint{Thread: session, Step: st.Step + 1, Status: store.StatusDone,
		Values: values, Lists: map[string][]store.Op{"messages": ops}, Index: &sess, Durability: store.Sync})
}

func indexOf(items []store.Item, id string) int {
	for i, it := range items {
		if it.ID == id {
			return i
		}
	}
	return -1
}

// Fork starts a new session whose conversation is session's before prompt
// n, with its history up to then; files are untouched. It returns the new
// session's ID.
func (rt *Runtime) Fork(ctx context.Context, session string, n int) (string, error) {
	c, _, err := rt.checkpointOf(ctx, session, n)
	if err != nil {
		return "", err
	}
	sess, err := rt.cfg.Store.Session(ctx, session)
	if err != nil {
		return "", err
	}
	st, err := rt.cfg.Store.Load(ctx, session, "")
	if err != nil {
		return "", fmt.Errorf("load session %s: %w", session, err)
	}
	idx := indexOf(st.Lists["messages"], c.Message)
	if idx < 0 {
		return "", fmt.Errorf("checkpoint %d of session %s: its prompt is not in the conversation any more", n, session)
	}
	id := NewSessionID()
	lists := map[string][]store.Op{}
	for name, items := range st.Lists {
		if name == "messages" {
			items = items[:idx]
		}
		for _, it := range items {
			lists[name] = append(lists[name], store.Op{Kind: store.OpAppend, ID: it.ID, Body: it.Body})
		}
	}
	values := map[string]json.RawMessage{}
	for k, v := range st.Values {
		values[k] = v
	}
	values["runStart"] = json.RawMessage(`""`)
	var sum Summary
	if json.Unmarshal(st.Values["summary"], &sum) == nil && sum.UpTo != "" && indexOf(st.Lists["messages"][:idx], sum.UpTo) < 0 {
		values["summary"] = json.RawMessage(`{"text":"","upTo":""}`)
	}
	now := time.Now()
	fork := sess
	fork.ID, fork.Title, fork.Status, fork.Created, fork.Updated, fork.Messages = id, "Fork of "+sess.Title, store.StatusDone, now, now, idx
	if err := rt.cfg.Store.Put(ctx, store.Checkpoint{Thread: id, Step: 0, Status: store.StatusDone, Values: values, Lists: lists,
		Index: &fork, Durability: store.Sync}); err != nil {
		return "", err
	}
	return id, rt.copyHistory(ctx, session, id, n)
}

// copyHistory gives the fork to the checkpoints before n, and the
// contents they name.
func (rt *Runtime) copyHistory(ctx context.Context, from, to string, n int) error {
	cps, err := rt.Checkpoints(ctx, from)
	if err != nil {
		return err
	}
	blobs, err := rt.hist.LoadBlobs(ctx, from)
	if err != nil {
		return err
	}
	copied := map[string]bool{}
	for _, c := range cps {
		if c.N >= n {
			break
		}
		for _, f := range c.Files {
			for _, h := range []string{f.Before, f.After} {
				if b, err := blobs.Get(h); h != "" && !copied[h] && err == nil {
					if err := rt.hist.PutBlob(ctx, to, h, b, ""); err != nil {
						return err
					}
					copied[h] = true
				}
			}
		}
		body, _ := json.Marshal(c)
		if err := rt.hist.PutEntry(ctx, to, c.N, body, store.Sync); err != nil {
			return err
		}
	}
	return nil
}

// Retry rewinds the session's conversation to before its last prompt
// and sends that prompt again (req's model, if given, answers it).
func (g *Registry) Retry(ctx context.Context, rt *Runtime, req Request) (Result, error) {
	var prompt string
	err := g.CheckRewindable(ctx, rt, req.Session, func() error {
		cps, err := rt.Checkpoints(ctx, req.Session)
		if err != nil {
			return err
		}
		if len(cps) == 0 {
			return fmt.Errorf("%w: session %s has no prompt to retry", ErrUnknownCheckpoint, req.Session)
		}
		last := cps[len(cps)-1]
		prompt = last.Prompt
		return rt.RewindConversation(ctx, req.Session, last.N)
	})
	if err != nil {
		return Result{}, err
	}
	req.Prompt = prompt
	return g.Run(ctx, rt, req)
}

// IsRewindError reports whether err is the caller's: an unknown
// checkpoint.
func IsRewindError(err error) bool { return errors.Is(err, ErrUnknownCheckpoint) }
