package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agent-lsp/agent-lsp/agent/tools"
	"github.com/agent-lsp/agent-lsp/store"
)

// Rewind history (docs/rewind.md). Checkpoint N is the state of a session
// just before its prompt N was sent (agent.run, a queued prompt): the ID of
// the human message prompt N added (it and what follows leave the
// conversation on a rewind) and the files the run changed while prompt N
// was its newest, with their content before and after (store.History
// keeps the contents, by tools.Hash, compressed, once per session).

// ErrUnknownCheckpoint is wrapped by the error of a checkpoint a session
// does not have.
var ErrUnknownCheckpoint = errors.New("unknown checkpoint")

// Reasons a checkpoint's file is not restorable.
const (
	ReasonCommand = "changed by a command, not restorable"
	ReasonPruned  = "its earlier content was pruned from the history"
)

// Checkpoint is one entry of a session's rewind history.
type Checkpoint struct {
	N       int       `json:"n"`
	Prompt  string    `json:"prompt"` // the prompt as the model got it
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	Model   string    `json:"model"`
	// Files are the files changed while prompt N was the run's newest.
	Files []FileChange `json:"files,omitempty"`
	// Notes tell what the history could not record (cmdscan.go).
	Notes []string `json:"notes,omitempty"`
}

// FirstLine is the prompt's first line.
func (c Checkpoint) FirstLine() string {
	line, _, _ := strings.Cut(strings.TrimSpace(c.Prompt), "\n")
	return line
}

// FileChange is a file a prompt's run changed.
type FileChange struct {
	Root string `json:"root"` // its project's folder
	Rel  string `json:"rel"`  // relative to Root, with slashes
	// Before is the Hash of its content before the prompt's first change
	// ("" when it did not exist: Created); After of its content after the
	// last one ("" when a command deleted it).
	Before  string `json:"before,omitempty"`
	After   string `json:"after,omitempty"`
	Created bool   `json:"created,omitempty"`
	// Unknown: a command changed it and its earlier content is unknown.
	Unknown bool `json:"unknown,omitempty"`
	Added   int  `json:"added"`
	Removed int  `json:"removed"`
}

// Path is the file's absolute path.
func (f FileChange) Path() string { return filepath.Join(f.Root, filepath.FromSlash(f.Rel)) }

// historyRecorder records a run's checkpoints: one per prompt, and the files
// changed while it is the newest. Shared by a run and its subagents.
type historyRecorder struct {
	rt      *Runtime
	session string
	d       store.Durability

	mu     sync.Mutex // guards cur, before, stored, next, earlierPaths, repos, ended, scanning and idle
	cur    *Checkpoint
	before map[string]string // path -> its text before cur's first change of it
	stored map[string]bool   // hashes stored by this run
	next   int               // the next checkpoint's number; 0: read it from the store
	// earlierPaths are the files of the checkpoints before cur (nil: not
	// read yet); repos the git repositories of projects (cmdscan.go).
	earlierPaths map[string]bool
	repos        map[string]*repoOf
	// ended: the run is over (a background process's scan records into
	// the stored checkpoint); scanning the scans of ended background
	// processes under way (true: abandoned), idle closed when none is
	// (bgscan.go).
	ended    bool
	scanning map[*commandScan]bool
	idle     chan struct{}
}

func (rt *Runtime) newHistoryRecorder(session string, d store.Durability) *historyRecorder {
	return &historyRecorder{rt: rt, session: session, d: d, stored: map[string]bool{}}
}

// begin records a checkpoint before prompt text (the human message id)
// is sent: the next number of the session's history.
func (rec *historyRecorder) begin(ctx context.Context, text, id, model string) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.next == 0 { // read once: while the run goes, only it adds checkpoints
		entries, err := rec.rt.hist.Entries(ctx, rec.session)
		if err != nil {
			rec.rt.cfg.Log("rewind history of %s: %v", rec.session, err)
			return
		}
		rec.next = 1
		if ns := store.Numbers(entries); len(ns) > 0 {
			rec.next = ns[len(ns)-1] + 1
		}
		rec.prune(ctx, entries) // the size cap, once per run (historycap.go)
	}
	if rec.cur != nil && rec.earlierPaths != nil {
		for _, f := range rec.cur.Files {
			rec.earlierPaths[f.Path()] = true
		}
	}
	rec.cur = &Checkpoint{N: rec.next, Prompt: text, Message: id, Time: time.Now().UTC(), Model: model}
	rec.next++
	rec.before = map[string]string{}
	rec.put(ctx)
}

// put stores cur; the caller holds mu.
func (rec *historyRecorder) put(ctx context.Context) {
	body, err := json.Marshal(rec.cur)
	if err == nil {
		err = rec.rt.hist.PutEntry(context.WithoutCancel(ctx), rec.session, rec.cur.N, body, rec.d)
	}
	if err != nil {
		rec.rt.cfg.Log("rewind history of %s: %v", rec.session, err)
	}
}

// blob stores text once per run; the caller holds mu.
func (rec *historyRecorder) blob(ctx context.Context, text string) string {
	h := tools.Hash(text)
	if !rec.stored[h] {
		if err := rec.rt.hist.PutBlob(context.WithoutCancel(ctx), rec.session, h, []byte(text), rec.d); err != nil {
			rec.rt.cfg.Log("rewind history of %s: %v", rec.session, err)
			return h
		}
		rec.stored[h] = true
	}
	return h
}

// edit records the agent's change of path from before to after (an
// intent, recorded before the change is made).
func (rec *historyRecorder) edit(ctx context.Context, path, before, after string, create bool) {
	if rec == nil {
		return
	}
	p, ok := rec.rt.cfg.Workspace.ProjectFor(path)
	if !ok {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.cur == nil {
		return
	}
	rel := filepath.ToSlash(p.Rel(path))
	i, added := rec.file(p.Root(), rel)
	f := &rec.cur.Files[i]
	if added {
		if create && before == "" {
			f.Created = true
		} else {
			f.Before = rec.blob(ctx, before)
		}
	}
	if _, seen := rec.before[path]; !seen {
		rec.before[path] = before // (a resumed run's earlier text is not at hand: its counts start here)
	}
	f.After = rec.blob(ctx, after)
	f.Added, f.Removed = lineChanges(rec.before[path], after)
	rec.put(ctx)
}

// file returns the index of cur's change of rel in root, adding it
// (added); the caller holds mu.
func (rec *historyRecorder) file(root, rel string) (int, bool) {
	for i, f := range rec.cur.Files {
		if f.Root == root && f.Rel == rel {
			return i, false
		}
	}
	rec.cur.Files = append(rec.cur.Files, FileChange{Root: root, Rel: rel})
	return len(rec.cur.Files) - 1, true
}

// lineChanges counts the lines of after not in before (added) and of
// before not in after (removed), as multisets: a diff's counts for the
// usual edit, at a fraction of its cost.
func lineChanges(before, after string) (added, removed int) {
	count := map[string]int{}
	for _, l := range strings.SplitAfter(before, "\n") {
		if l != "" {
			count[l]++
		}
	}
	for _, l := range strings.SplitAfter(after, "\n") {
		if l == "" {
			continue
		}
		if count[l] > 0 {
			count[l]--
		} else {
			added++
		}
	}
	for _, c := range count {
		removed += c
	}
	return added, removed
}

// intentPort wraps a call's intent port: an edit's intent, once recorded,
// is recorded in the history too (before the edit is made).
func (rec *historyRecorder) intentPort(port func(context.Context, tools.Intent) error) func(context.Context, tools.Intent) error {
	if rec == nil || port == nil {
		return port
	}
	return func(ctx context.Context, in tools.Intent) error {
		if err := port(ctx, in); err != nil {
			return err
		}
		if in.Path != "" && in.After != "" {
			rec.edit(ctx, in.Path, in.BeforeText, in.AfterText, in.Create)
		}
		return nil
	}
}

// Checkpoints returns a session's checkpoints in order.
func (rt *Runtime) Checkpoints(ctx context.Context, session string) ([]Checkpoint, error) {
	if _, err := rt.cfg.Store.Session(ctx, session); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("%w %q", ErrUnknownSession, session)
		}
		return nil, err
	}
	return LoadCheckpoints(ctx, rt.hist.History, session)
}

// LoadCheckpoints reads a session's checkpoints from h, in order.
func LoadCheckpoints(ctx context.Context, h *store.History, session string) ([]Checkpoint, error) {
	entries, err := h.Entries(ctx, session)
	if err != nil {
		return nil, err
	}
	out := []Checkpoint{}
	for _, n := range store.Numbers(entries) {
		var c Checkpoint
		if err := json.Unmarshal(entries[n], &c); err != nil {
			return nil, fmt.Errorf("checkpoint %d of %s: %w: %v", n, session, store.ErrDamaged, err)
		}
		c.N = n
		out = append(out, c)
	}
	return out, nil
}

// Restorable says whether f can be put back as it was before its
// checkpoint, and if not why.
func (f FileChange) Restorable(blobs *store.Blobs) (bool, string) {
	switch {
	case badName(f.Rel) != "":
		return false, badName(f.Rel)
	case f.Unknown:
		return false, ReasonCommand
	case !f.Created && !blobs.Has(f.Before):
		return false, ReasonPruned
	}
	return true, ""
}

// History is the runtime's rewind history, for reading: a write through
// it is not counted towards the size cap (historysize.go).
func (rt *Runtime) History() *store.History { return rt.hist.History }

// resume makes the session's newest checkpoint the current one again: a
// resumed run's changes belong to the prompt it was running.
func (rec *historyRecorder) resume(ctx context.Context) {
	cps, err := rec.rt.Checkpoints(ctx, rec.session)
	if err != nil || len(cps) == 0 {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	last := cps[len(cps)-1]
	rec.cur, rec.before, rec.next = &last, map[string]string{}, last.N+1
}
