package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Document is an open editor buffer.
type Document struct {
	Path    string
	Version int32
	Text    string
	// Dirty: the buffer has changes the disk does not, as far as the
	// server knows (didOpen with text unlike the file's, didChange since the
	// last didSave).
	Dirty bool
}

// notifyLocked wakes the waiters for a document's next version. w.mu is held.
func (w *Workspace) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// Open records a document the editor opened. It is dirty when its text is
// not the file's (a buffer modified before it was shown to the server, or a
// new file not yet written).
func (w *Workspace) Open(path string, version int32, text string) {
	path = filepath.Clean(path)
	dirty := differsFromDisk(path, text) // before the lock: it reads the disk
	w.mu.Lock()
	w.docs[path] = &Document{Path: path, Version: version, Text: text, Dirty: dirty}
	delete(w.unseen, path) // the editor shows its text: an unseen edit is in it or gone
	w.notifyLocked()
	w.mu.Unlock()
	if p, ok := w.ProjectFor(path); ok {
		p.setOpen(path, true)
	}
}

// differsFromDisk reports whether text is not the file's content: a file
// that cannot be read, or of another size, differs; one of the same size is
// compared when it is at most MaxReadSize.
func differsFromDisk(path, text string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(text)) {
		return true
	}
	if fi.Size() > MaxReadSize {
		return false
	}
	disk, err := os.ReadFile(path)
	return err != nil || !bytes.Equal(disk, []byte(text))
}

// Change applies a didChange to an open document, which is then dirty.
func (w *Workspace) Change(path string, version int32, changes []Change) error {
	path = filepath.Clean(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	d, ok := w.docs[path]
	if !ok {
		return fmt.Errorf("change %s: document is not open", path)
	}
	text, err := ApplyChanges(d.Text, changes, w.enc)
	if err != nil {
		return fmt.Errorf("change %s: %w", path, err)
	}
	w.docs[path] = &Document{Path: path, Version: version, Text: text, Dirty: true}
	if u, ok := w.unseen[path]; ok && version > u.version {
		delete(w.unseen, path)
	}
	w.notifyLocked()
	return nil
}

// Saved records a didSave, or a client's answer that it saved the
// document, and reports whether the disk now holds the document's text (true
// for a document that is not open: there is nothing to compare). The
// document is clean only then. A save that raced a change (an editor's
// auto-save that began before an edit landed) leaves it dirty, so the next
// command still asks to save it.
//
// While an edit the editor applied has not reached the server (EditUnseen),
// the document's text is the edit's result, not the server's older copy: a
// disk that still holds the older text is not saved.
func (w *Workspace) Saved(path string) bool {
	path = filepath.Clean(path)
	w.mu.Lock()
	d, ok := w.docs[path]
	var text string
	if ok {
		text = d.Text
	}
	u, pending := w.unseen[path]
	if pending && ok && d.Version > u.version {
		delete(w.unseen, path) // the edit's change came: the document says it all
		pending = false
	}
	w.mu.Unlock()
	if pending {
		return !differsFromDisk(path, u.text)
	}
	if !ok {
		return true
	}
	dirty := differsFromDisk(path, text) // without the lock: it reads the disk
	w.mu.Lock()
	defer w.mu.Unlock()
	if d, ok := w.docs[path]; ok && d.Text == text { // not changed meanwhile
		c := *d
		c.Dirty = dirty
		w.docs[path] = &c
		w.notifyLocked()
	}
	return !dirty
}

// unseenEdit is an edit the editor applied whose result the server has not
// seen: the document's text once applied, and the version it was applied
// to (-1: a file the editor had not shown the server).
type unseenEdit struct {
	text    string
	version int32
}

// EditUnseen records that the editor applied an edit that makes path's
// text text to its version version (-1 when the server did not see it
// open), and that the server has not seen the result yet (its didChange or
// didOpen is late). Until a newer version of the document arrives, Saved
// compares the disk with text.
func (w *Workspace) EditUnseen(path, text string, version int32) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unseen == nil {
		w.unseen = map[string]unseenEdit{}
	}
	w.unseen[filepath.Clean(path)] = unseenEdit{text: text, version: version}
}

// Close forgets an open document.
func (w *Workspace) Close(path string) {
	path = filepath.Clean(path)
	w.mu.Lock()
	delete(w.docs, path)
	delete(w.unseen, path) // the editor's messages come in order: a change not seen by now never comes
	w.notifyLocked()
	w.mu.Unlock()
	if p, ok := w.ProjectFor(path); ok {
		p.setOpen(path, false)
	}
}

// Document returns an open document.
func (w *Workspace) Document(path string) (Document, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	d, ok := w.docs[filepath.Clean(path)]
	if !ok {
		return Document{}, false
	}
	return *d, true
}

// AwaitDocument waits until path is open with a version newer than after
// (any version when after is negative) and returns it; false when ctx ends
// first.
func (w *Workspace) AwaitDocument(ctx context.Context, path string, after int32) (Document, bool) {
	path = filepath.Clean(path)
	for {
		w.mu.RLock()
		d, ok := w.docs[path]
		changed := w.changed
		w.mu.RUnlock()
		if ok && (after < 0 || d.Version > after) {
			return *d, true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return Document{}, false
		}
	}
}

// ExpectOpen records that the editor was asked to change path, which it has
// not shown the server: it will probably open it (didOpen) soon.
func (w *Workspace) ExpectOpen(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.expecting == nil {
		w.expecting = map[string]bool{}
	}
	w.expecting[filepath.Clean(path)] = true
}

// Expecting reports whether path is expected to open (ExpectOpen) and is not open yet.
func (w *Workspace) Expecting(path string) bool {
	path = filepath.Clean(path)
	w.mu.RLock()
	defer w.mu.RUnlock()
	_, open := w.docs[path]
	return w.expecting[path] && !open
}

// ExpectOpenDone forgets an expectation of ExpectOpen.
func (w *Workspace) ExpectOpenDone(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.expecting, filepath.Clean(path))
}

// NoteEdited records that session's agent edited path.
func (w *Workspace) NoteEdited(path, session string) {
	path = filepath.Clean(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.edited[path] == nil {
		w.edited[path] = map[string]bool{}
	}
	w.edited[path][session] = true
}

// EditedBy lists the files under root that session's agent edited and that
// may have unsaved changes in the editor: dirty open documents, and edited
// files the server does not see open (an editor may hold them in a buffer
// it has not shown the server). Sorted.
func (w *Workspace) EditedBy(session, root string) []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []string
	for path, sessions := range w.edited {
		if !sessions[session] || !within(root, path) {
			continue
		}
		if d, ok := w.docs[path]; ok && !d.Dirty {
			continue
		}
		out = append(out, path)
	}
	sort.Strings(out)
	return out
}

// Unsaved lists the open documents under root with unsaved changes, sorted.
func (w *Workspace) Unsaved(root string) []Document {
	w.mu.RLock()
	defer w.mu.RUnlock()
	var out []Document
	for path, d := range w.docs {
		if d.Dirty && within(root, path) {
			out = append(out, *d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// editLocks serializes the agent's edits of one document: from reading its
// text to the editor having applied the change.
type editLocks struct {
	mu sync.Mutex           // guards m
	m  map[string]*pathLock // path -> its lock while anyone holds or waits for it
}

type pathLock struct {
	sync.Mutex
	users int // holders and waiters; the entry goes when it drops to zero
}

// LockEdits waits until no other agent edit of path is in flight and
// returns the func that ends this one. Edits of one document, even by tool
// calls running in parallel, are computed one after the other, each against
// the text the one before it left.
func (w *Workspace) LockEdits(path string) (unlock func()) {
	path = filepath.Clean(path)
	l := &w.locks
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*pathLock{}
	}
	pl := l.m[path]
	if pl == nil {
		pl = &pathLock{}
		l.m[path] = pl
	}
	pl.users++
	l.mu.Unlock()
	pl.Lock()
	return func() {
		pl.Unlock()
		l.mu.Lock()
		if pl.users--; pl.users == 0 {
			delete(l.m, path)
		}
		l.mu.Unlock()
	}
}

// ChangedLines returns the 1-based line range where b differs from a
// (after their common first and last lines), for messages such as "lines
// 3-5 differ"; ok is false when they are equal.
func ChangedLines(a, b string) (from, to int, ok bool) {
	if a == b {
		return 0, 0, false
	}
	la, lb := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	head := 0
	for head < len(la) && head < len(lb) && la[head] == lb[head] {
		head++
	}
	tail := 0
	for tail < len(la)-head && tail < len(lb)-head && la[len(la)-1-tail] == lb[len(lb)-1-tail] {
		tail++
	}
	return head + 1, max(head+1, len(lb)-tail), true
}
