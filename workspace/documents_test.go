package workspace

import (
	"os"
	"path/filepath"
	"testing"
)

// A document is dirty while its text differs from the disk; a save counts
// only when the disk then holds its text (a save that raced an edit does
// not make the edit look saved).
func TestSavedChecksTheDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.go")
	os.WriteFile(path, []byte("one\n"), 0o644)
	w := New(UTF8)
	w.Open(path, 1, "one\n")
	dirty := func() bool { d, _ := w.Document(path); return d.Dirty }
	if dirty() {
		t.Fatal("a document as on disk is dirty")
	}
	if err := w.Change(path, 2, []Change{{Text: "two\n"}}); err != nil || !dirty() {
		t.Fatalf("changed: dirty %v, %v", dirty(), err)
	}
	if w.Saved(path) { // the disk still holds "one": an auto-save that began before the change
		t.Fatal("Saved reported the disk has the changed text")
	}
	if !dirty() {
		t.Fatal("a save of older text made the change look saved")
	}
	os.WriteFile(path, []byte("two\n"), 0o644)
	if !w.Saved(path) {
		t.Fatal("Saved reported the disk lacks the text it has")
	}
	if dirty() {
		t.Fatal("saved, and still dirty")
	}
}

// An edit the editor applied whose change the server has not seen yet
// (EditUnseen): a save counts only once the disk holds the edit, not the
// server's older copy; the edit's change (or the user's next), a didOpen or
// a close ends the wait for it.
func TestSavedWaitsForAnUnseenEdit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.go")
	os.WriteFile(path, []byte("one\n"), 0o644)
	w := New(UTF8)
	w.Open(path, 1, "one\n")
	w.EditUnseen(path, "one\nedit\n", 1)
	if w.Saved(path) { // disk and the server's copy agree, both without the edit
		t.Fatal("a save without the edit on disk counted")
	}
	os.WriteFile(path, []byte("one\nedit\n"), 0o644)
	if !w.Saved(path) {
		t.Fatal("the disk holds the edit, and the save did not count")
	}
	// The edit's change arrives, then the user types: the document rules again.
	w.EditUnseen(path, "one\nedit\n", 1)
	if err := w.Change(path, 2, []Change{{Text: "one\nedit\nuser\n"}}); err != nil {
		t.Fatal(err)
	}
	if w.Saved(path) {
		t.Fatal("the user's text is not on disk, and the save counted")
	}
	os.WriteFile(path, []byte("one\nedit\nuser\n"), 0o644)
	if !w.Saved(path) {
		t.Fatal("the document's text is on disk, and the save did not count")
	}
	// A file the server never saw open: the disk must hold the edit.
	other := filepath.Join(t.TempDir(), "b.go")
	os.WriteFile(other, []byte("old\n"), 0o644)
	w.EditUnseen(other, "new\n", -1)
	if w.Saved(other) {
		t.Fatal("an unseen edit of a file not open counted as saved")
	}
	w.Open(other, 1, "old\n") // the editor shows its buffer: the document rules
	w.Close(other)
	if !w.Saved(other) {
		t.Fatal("after a didOpen and a close, nothing is left to wait for")
	}
}
