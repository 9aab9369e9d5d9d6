//go:build unix

package workspace

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Entry.Lstat says what Info says, for a file, an executable, a link and
// a FIFO (a walk's entries).
func TestEntryLstatIsInfo(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o640)
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "sub", "run.sh"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("/etc/passwd", filepath.Join(root, "sub", "out"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Skip(err)
	}
	w := New(UTF16)
	p, err := w.Add("p", root)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = p.Files(context.Background(), root, func(e Entry) error {
		seen++
		got, err := e.Lstat()
		want, err2 := e.Info()
		if err != nil || err2 != nil {
			t.Fatalf("%s: %v %v", e.Rel, err, err2)
		}
		if got.Name() != want.Name() || got.Size() != want.Size() || got.Mode() != want.Mode() || !got.ModTime().Equal(want.ModTime()) || got.IsDir() != want.IsDir() {
			t.Errorf("%s: Lstat %v %d %v %v, Info %v %d %v %v", e.Rel, got.Name(), got.Size(), got.Mode(), got.ModTime(), want.Name(), want.Size(), want.Mode(), want.ModTime())
		}
		return nil
	})
	if err != nil || seen != 4 {
		t.Fatalf("walked %d entries: %v", seen, err)
	}
}
