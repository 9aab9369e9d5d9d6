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
