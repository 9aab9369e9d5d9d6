package tools

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agent-lsp/agent-lsp/workspace"
	"sync"
)

// Bounds of a snapshot of protected files: what does not fit is not restored
// (and the model is told so).
const (
	maxProtectedFile  = 1 << 20
	maxProtectedFiles = 2000
)

// protectedSnapshot holds the protected files at a project's root before a
// sandboxed command, to restore any the command changed. Landlock grants
// whole subtrees: it cannot keep a command from writing .git/config inside
// the writable project, so the server undoes it afterwards.
type protectedSnapshot struct {
	root  string
	files map[string]protectedFile // relative path -> content before
	dirs  []string                 // relative directories whose new files are removed
	big   []string                 // files too big to snapshot
}

type protectedFile struct {
	data []byte
	mode fs.FileMode
}

// snapshotProtected records the protected files at root: the root's own
// protected files and directories (ProtectedPaths), and of .git only what
// runs programs (config, hooks, info).
func snapshotProtected(root string) *protectedSnapshot {
	s := &protectedSnapshot{root: root, files: map[string]protectedFile{}}
	for _, rel := range protectedRoots(root) {
		s.dirs = append(s.dirs, rel)
		filepath.WalkDir(filepath.Join(root, rel), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || len(s.files) >= maxProtectedFiles {
				return nil
			}
			r, _ := filepath.Rel(root, path)
			info, err := d.Info()
			if err != nil || !info.Mode().IsRegular() {
				return nil
			}
			if info.Size() > maxProtectedFile {
				s.big = append(s.big, r)
				return nil
			}
			if b, err := os.ReadFile(path); err == nil {
				s.files[r] = protectedFile{data: b, mode: info.Mode().Perm()}
			}
			return nil
		})
	}
	return s
}

// protectedRoots lists the protected files and directories directly at root.
func protectedRoots(root string) []string {
	var out []string
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		name := e.Name()
		if name == ".git" && e.IsDir() {
			out = append(out, ".git/config", ".git/hooks", ".git/info")
			continue
		}
		if _, ok := workspace.Match(workspace.ProtectedPaths, name); ok {
			out = append(out, name)
		} else if _, ok := workspace.Match(workspace.ProtectedPaths, name+"/x"); ok && e.IsDir() {
			out = append(out, name)
		}
	}
	for _, nested := range []string{".github/workflows"} {
		if fi, err := os.Stat(filepath.Join(root, nested)); err == nil && fi.IsDir() {
			out = append(out, nested)
		}
	}
	return out
}

// change is a protected file a command changed: modified or deleted (put
// back), or added (removed).
type change struct {
	rel   string
	added bool
}

// changes lists the protected files that differ from the snapshot.
func (s *protectedSnapshot) changes() []change {
	var out []change
	for rel, f := range s.files {
		if now, err := os.ReadFile(filepath.Join(s.root, rel)); err != nil || !bytes.Equal(now, f.data) {
			out = append(out, change{rel: rel})
		}
	}
	dirs := slices.Clone(s.dirs)
	// Protected files and directories created at the root (but not a new
	// repository's .git: git init writes its own config).
	for _, rel := range protectedRoots(s.root) {
		if !slices.Contains(dirs, rel) && !strings.HasPrefix(rel, ".git/") {
			dirs = append(dirs, rel)
		}
	}
	for _, rel := range dirs {
		filepath.WalkDir(filepath.Join(s.root, rel), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			r, _ := filepath.Rel(s.root, path)
			if _, known := s.files[r]; !known && !slices.Contains(s.big, r) {
				out = append(out, change{rel: r, added: true})
			}
			return nil
		})
	}
	slices.SortFunc(out, func(a, b change) int { return strings.Compare(a.rel, b.rel) })
	return out
}

// restore undoes the changes: it puts back modified and deleted files and
// removes added ones, and returns what it undid.
func (s *protectedSnapshot) restore() []string {
	var undone []string
	for _, c := range s.changes() {
		path := filepath.Join(s.root, c.rel)
		if c.added {
			if err := os.Remove(path); err == nil || errors.Is(err, fs.ErrNotExist) {
				undone = append(undone, c.rel+" (removed)")
			}
			continue
		}
		f := s.files[c.rel]
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.Remove(path) // a symlink or directory put in its place
		if err := os.WriteFile(path, f.data, f.mode); err == nil {
			undone = append(undone, c.rel+" (restored)")
		} else {
			undone = append(undone, fmt.Sprintf("%s (could not be restored: %v)", c.rel, err))
		}
	}
	return undone
}

// undoneNote tells the model what the sandbox undid, or will undo when the
// commands still running in the project end.
func undoneNote(undone []string, pending bool) string {
	switch {
	case len(undone) == 0:
		return ""
	case pending:
		return "\n[commands may not change protected files: these changes are undone when the commands running now in this project end: " + strings.Join(undone, ", ") + "]"
	}
	return "\n[the sandbox undid changes to protected files, which commands may not change: " + strings.Join(undone, ", ") + "]"
}

// ProtectedGuard restores a project's protected files after the sandboxed
// commands that run in it: the first command to start snapshots them, and
// the last to end restores them, so commands running in parallel cannot make
// one another's changes the baseline. One guard serves a runtime.
type ProtectedGuard struct {
	mu     sync.Mutex          // guards byRoot
	byRoot map[string]*guarded // project root -> its commands in flight
}

type guarded struct {
	running int
	snap    *protectedSnapshot
}

// enter records that a sandboxed command starts in root.
func (g *ProtectedGuard) enter(root string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byRoot == nil {
		g.byRoot = map[string]*guarded{}
	}
	s := g.byRoot[root]
	if s == nil {
		s = &guarded{snap: snapshotProtected(root)}
		g.byRoot[root] = s
	}
	s.running++
}

// leave records that a command ended in root and returns the note for its
// result: the last one restores the protected files and says what it undid;
// the others say what is pending.
func (g *ProtectedGuard) leave(root string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.byRoot[root]
	if s.running--; s.running > 0 {
		var pending []string
		for _, c := range s.snap.changes() {
			pending = append(pending, c.rel)
		}
		return undoneNote(pending, true)
	}
	delete(g.byRoot, root)
	return undoneNote(s.snap.restore(), false)
}
