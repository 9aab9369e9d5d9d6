//go:build unix

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func openRootT(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// leftovers fails when a temporary file or backup is left in dir.
func leftovers(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".agent-lsp-") {
			t.Fatalf("left behind: %s", e.Name())
		}
	}
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A file is replaced by a new one with its mode, and a new file is created
// whole; create refuses an existing file and leaves it alone.
func TestWriteAtomicReplacesAndCreates(t *testing.T) {
	dir := t.TempDir()
	r := openRootT(t, dir)
	path := filepath.Join(dir, "run.sh")
	os.WriteFile(path, []byte("old\n"), 0o750)
	os.Chmod(path, 0o750)
	before := inode(t, path)
	w, err := WriteAtomic(r, "run.sh", []byte("new\n"), false)
	if err != nil || w.InPlace != "" || w.Note() != "" {
		t.Fatalf("write: %+v %v", w, err)
	}
	fi, _ := os.Stat(path)
	if b, _ := os.ReadFile(path); string(b) != "new\n" || fi.Mode().Perm() != 0o750 {
		t.Fatalf("after the write: %q %v", b, fi.Mode())
	}
	if inode(t, path) == before {
		t.Fatal("the file was rewritten in place, not replaced")
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if _, err := WriteAtomic(r, "sub/new.txt", []byte("fresh"), true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "new.txt")); string(b) != "fresh" {
		t.Fatalf("created: %q", b)
	}
	if _, err := WriteAtomic(r, "sub/new.txt", []byte("again"), true); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a create over an existing file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "new.txt")); string(b) != "fresh" {
		t.Fatalf("a refused create changed the file: %q", b)
	}
	leftovers(t, dir)
	leftovers(t, filepath.Join(dir, "sub"))
}

// A symlink inside the root is followed: its target gets the content and
// the link stays a link. One that leaves the root is refused.
func TestWriteAtomicFollowsLinksInside(t *testing.T) {
	dir := t.TempDir()
	r := openRootT(t, dir)
	os.WriteFile(filepath.Join(dir, "real.txt"), []byte("old"), 0o644)
	os.Symlink("real.txt", filepath.Join(dir, "link.txt"))
	if _, err := WriteAtomic(r, "link.txt", []byte("new"), false); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(filepath.Join(dir, "link.txt")); fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced by a file")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "real.txt")); string(b) != "new" {
		t.Fatalf("the link's target: %q", b)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(dir, "abs"))
	os.Symlink("../"+filepath.Base(filepath.Dir(outside))+"/secret", filepath.Join(dir, "rel"))
	for _, name := range []string{"abs", "rel"} {
		if _, err := WriteAtomic(r, name, []byte("pwned"), false); err == nil {
			t.Fatalf("a write through %s (a link out of the root) succeeded", name)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "secret" {
		t.Fatalf("the file outside the root: %q", b)
	}
}

// A file with another hard link is rewritten in place (both names see the
// new content), the result says so, and no backup is left.
func TestWriteAtomicHardLinkInPlace(t *testing.T) {
	dir := t.TempDir()
	r := openRootT(t, dir)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("old content\n"), 0o644)
	os.Link(filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt"))
	w, err := WriteAtomic(r, "a.txt", []byte("new\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.InPlace, "2 hard links") || !strings.Contains(w.Note(), "in place") {
		t.Fatalf("written: %+v", w)
	}
	for _, n := range []string{"a.txt", "b.txt"} {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != "new\n" {
			t.Fatalf("%s: %q", n, b)
		}
	}
	leftovers(t, dir)
}

// A file the rename cannot replace (EBUSY: a bind-mounted file) is
// rewritten in place.
func TestWriteAtomicRenameRefused(t *testing.T) {
	dir := t.TempDir()
	r := openRootT(t, dir)
	os.WriteFile(filepath.Join(dir, "mounted"), []byte("old"), 0o644)
	busy := atomicWriter{rename: func(*os.Root, string, string) error {
		return &os.LinkError{Op: "rename", Err: syscall.EBUSY}
	}}
	w, err := busy.write(r, "mounted", []byte("new, longer"), false)
	if err != nil || !strings.Contains(w.InPlace, "busy") {
		t.Fatalf("written %+v, %v", w, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "mounted")); string(b) != "new, longer" {
		t.Fatalf("content: %q", b)
	}
	leftovers(t, dir)
}

// A file of another user is rewritten in place and keeps its owner (as
// root only: nobody else can make one).
func TestWriteAtomicOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	dir := t.TempDir()
	r := openRootT(t, dir)
	path := filepath.Join(dir, "theirs.txt")
	os.WriteFile(path, []byte("old"), 0o664)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	w, err := WriteAtomic(r, "theirs.txt", []byte("new"), false)
	if err != nil || !strings.Contains(w.InPlace, "belongs to user 65534") {
		t.Fatalf("written %+v, %v", w, err)
	}
	fi, _ := os.Stat(path)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 65534 || st.Gid != 65534 {
		t.Fatalf("owner changed to %d:%d", st.Uid, st.Gid)
	}
	leftovers(t, dir)
}
