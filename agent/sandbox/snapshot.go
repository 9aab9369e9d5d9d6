package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"
	"syscall"
)

// Bounds of a snapshot: what does not fit is not restored, and the command
// is told.
const (
	maxSnapshotFile  = 1 << 20
	maxSnapshotFiles = 5000
)

// Outcome is what the sandbox did after a command: what it undid, what
// waits for other commands of the project to end, the repositories the
// command created, and what it could not watch.
type Outcome struct {
	Undone    []string // "<path> (restored)", "<path> (removed)"
	Pending   []string // changed, undone when the project's running commands end
	NewRepos  []string // .git directories or files the command created, disarmed (see disarm): read-only from the next command on
	Unwatched []string // protected files too big or too many to snapshot
}

// saved is one protected file (or symlink) as it was before the command.
type saved struct {
	data []byte
	mode fs.FileMode // permission bits; fs.ModeSymlink for a symlink, whose text data is
}

// snapshot holds a project's git metadata and protected files before a
// command (the snapshot mechanism), to put back what the command changed.
type snapshot struct {
	root   string
	before *scan
	files  map[string]saved // relative path -> content before
	big    []string         // not saved: too big, or past the count
}

// takeSnapshot saves the protected parts of sc under p.
func takeSnapshot(sc *scan, p Policy) *snapshot {
	s := &snapshot{root: p.Root, before: sc, files: map[string]saved{}}
	cut := metadataFiles(p.Root, sc.entries(), p, maxSnapshotFiles, func(rel string, fi fs.FileInfo) {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			if t, err := os.Readlink(joinRel(p.Root, rel)); err == nil {
				s.files[rel] = saved{data: []byte(t), mode: fs.ModeSymlink}
			}
		case !fi.Mode().IsRegular():
		case fi.Size() > maxSnapshotFile:
			s.big = append(s.big, rel)
		default:
			if b, err := readNoFollow(joinRel(p.Root, rel), maxSnapshotFile); err == nil {
				s.files[rel] = saved{data: b, mode: fi.Mode().Perm()}
			}
		}
	})
	if cut {
		s.big = append(s.big, fmt.Sprintf("(more than %d files)", maxSnapshotFiles))
	}
	return s
}

// changes lists what differs from the snapshot now: saved files changed or
// gone, and files added to the entries that were there before (a new
// entry is settle's).
func (s *snapshot) changes(after *scan, p Policy) (changed, added []string) {
	for rel, f := range s.files {
		if !s.same(rel, f) {
			changed = append(changed, rel)
		}
	}
	old := map[string]kind{}
	for _, e := range s.before.entries() {
		old[e.rel] = e.kind
	}
	var watched []entry
	for _, e := range after.entries() {
		if k, ok := old[e.rel]; ok && k == e.kind {
			watched = append(watched, e)
		}
	}
	metadataFiles(s.root, watched, p, 4*maxSnapshotFiles, func(rel string, fi fs.FileInfo) {
		if _, ok := s.files[rel]; !ok && !slices.Contains(s.big, rel) {
			added = append(added, rel)
		}
	})
	slices.Sort(changed)
	slices.Sort(added)
	return changed, added
}

// same reports whether rel still holds f.
func (s *snapshot) same(rel string, f saved) bool {
	abs := joinRel(s.root, rel)
	fi, err := os.Lstat(abs)
	if err != nil {
		return false
	}
	if f.mode&fs.ModeSymlink != 0 {
		t, err := os.Readlink(abs)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0 && t == string(f.data)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != f.mode {
		return false
	}
	b, err := readNoFollow(abs, maxSnapshotFile+1)
	return err == nil && bytes.Equal(b, f.data)
}

// restore puts back what the command changed and removes what it added,
// through an os.Root of the project, never following a symlink: a symlink
// where a directory was is removed, not followed. It runs only when no
// process of the project's commands is left.
func (s *snapshot) restore(after *scan, p Policy) Outcome {
	var out Outcome
	r, err := os.OpenRoot(s.root)
	if err != nil {
		out.Undone = append(out.Undone, fmt.Sprintf("nothing (the project cannot be opened: %v)", err))
		return out
	}
	defer r.Close()
	changed, added := s.changes(after, p)
	for _, rel := range added {
		if err := r.RemoveAll(rel); err == nil {
			out.Undone = append(out.Undone, rel+" (removed)")
		}
	}
	for _, rel := range changed {
		out.Undone = append(out.Undone, putBack(r, rel, s.files[rel]))
	}
	out.Unwatched = s.big
	return out
}

// putBack writes f at rel in r, replacing whatever is there.
func putBack(r *os.Root, rel string, f saved) string {
	if err := realDirs(r, path.Dir(rel)); err != nil {
		return fmt.Sprintf("%s (could not be restored: %v)", rel, err)
	}
	if err := r.RemoveAll(rel); err != nil {
		return fmt.Sprintf("%s (could not be restored: %v)", rel, err)
	}
	var err error
	if f.mode&fs.ModeSymlink != 0 {
		err = r.Symlink(string(f.data), rel)
	} else {
		var w *os.File
		if w, err = r.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, f.mode); err == nil {
			_, err = w.Write(f.data)
			err = errors.Join(err, w.Chmod(f.mode), w.Close())
		}
	}
	if err != nil {
		return fmt.Sprintf("%s (could not be restored: %v)", rel, err)
	}
	return rel + " (restored)"
}

// realDirs makes every component of dir (relative to r) a real directory:
// a symlink or a file in the way is removed (never followed) and a missing
// directory is made.
func realDirs(r *os.Root, dir string) error {
	if dir == "." || dir == "" {
		return nil
	}
	if err := realDirs(r, path.Dir(dir)); err != nil {
		return err
	}
	fi, err := r.Lstat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		if err := r.Remove(dir); err != nil {
			return err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return r.Mkdir(dir, 0o755)
}

// settle handles the entries a command created or replaced (both
// mechanisms): a new .git is kept but disarmed (it is read-only from the
// next command on) and reported; any other new protected path is removed; a protected
// symlink (which no mount can cover) is put back.
func settle(root string, before, after *scan, p Policy) Outcome {
	var out Outcome
	var r *os.Root
	open := func() bool { // the project, opened once when something is to be done
		if r == nil {
			var err error
			if r, err = os.OpenRoot(root); err != nil {
				return false
			}
		}
		return true
	}
	defer func() {
		if r != nil {
			r.Close()
		}
	}()
	old := map[string]entry{}
	for _, e := range before.entries() {
		old[e.rel] = e
	}
	now := map[string]bool{}
	for _, e := range after.entries() {
		now[e.rel] = true
		prev, known := old[e.rel]
		switch {
		case known && prev.kind == e.kind && prev.ino == e.ino && prev.link == e.link, liftedByUser(p, e.rel):
		case known && prev.kind != protectedLink:
			// Replaced: a mount kept it (namespaces), the restore put it back (snapshot).
		case !open():
			return out
		case known:
			out.Undone = append(out.Undone, putBack(r, e.rel, saved{data: []byte(prev.link), mode: fs.ModeSymlink}))
		case e.kind == gitFile && len(e.targets) > 0 && !slices.ContainsFunc(e.targets, func(t string) bool { return !writableByUser(p, t) }):
			// A worktree or a submodule of a repository the user let
			// commands write (its metadata is as trusted as that).
			out.NewRepos = append(out.NewRepos, e.rel)
		case e.kind == gitDir || e.kind == gitFile:
			out.NewRepos = append(out.NewRepos, disarm(r, e))
		default:
			if err := r.RemoveAll(e.rel); err == nil {
				out.Undone = append(out.Undone, e.rel+" (removed)")
			}
		}
	}
	// A protected symlink the command removed.
	for _, e := range before.entries() {
		if e.kind == protectedLink && !now[e.rel] && !liftedByUser(p, e.rel) && open() {
			out.Undone = append(out.Undone, putBack(r, e.rel, saved{data: []byte(e.link), mode: fs.ModeSymlink}))
		}
	}
	return out
}

// writableByUser reports whether abs lies in a directory of the project the
// user made writable (see liftedByUser).
func writableByUser(p Policy, abs string) bool {
	rel, ok := inside(p.Root, abs)
	return ok && liftedByUser(p, rel)
}

// disarm makes a repository a command created (e) run nothing when the
// user's git opens it: a .git directory keeps its objects and refs but its
// config, hooks and the rest are set aside (disarmRepo); a .git file, which
// names metadata elsewhere, is renamed aside; what cannot be set aside is
// removed. It returns how the tool result names it.
func disarm(r *os.Root, e entry) string {
	if e.kind == gitDir {
		if _, err := disarmRepo(r, e.rel); err == nil {
			return e.rel + " (its config and hooks set aside in " + path.Join(e.rel, Untrusted) + ")"
		}
	}
	aside := e.rel + UntrustedSuffix
	r.RemoveAll(aside)
	if err := r.Rename(e.rel, aside); err == nil {
		return e.rel + " (renamed " + aside + ")"
	}
	if err := r.RemoveAll(e.rel); err != nil {
		return fmt.Sprintf("%s (could not be set aside: %v)", e.rel, err)
	}
	return e.rel + " (removed)"
}

// guard keeps one snapshot per project for the snapshot mechanism: the
// first command to start there takes it, and the last to end restores it,
// so commands running in parallel cannot make one another's changes the
// baseline.
type guard struct {
	mu     sync.Mutex          // guards byRoot
	byRoot map[string]*guarded // project root -> its commands in flight
}

type guarded struct {
	running int
	snap    *snapshot
}

// enter records that a command starts in root, taking the snapshot if it
// is the first.
func (g *guard) enter(root string, take func() *snapshot) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byRoot == nil {
		g.byRoot = map[string]*guarded{}
	}
	s := g.byRoot[root]
	if s == nil {
		s = &guarded{snap: take()}
		g.byRoot[root] = s
	}
	s.running++
}

// leave records that a command ended in root (with every process of it);
// the last one restores the snapshot, the others report what is pending.
func (g *guard) leave(root string, after *scan, p Policy) Outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.byRoot[root]
	if s.running--; s.running > 0 {
		changed, added := s.snap.changes(after, p)
		return Outcome{Pending: append(changed, added...)}
	}
	delete(g.byRoot, root)
	out := s.snap.restore(after, p)
	more := settle(root, s.snap.before, after, p)
	out.Undone = append(out.Undone, more.Undone...)
	out.NewRepos = more.NewRepos
	return out
}

// readNoFollow reads at most max bytes of the regular file at abs, not
// following a final symlink.
func readNoFollow(abs string, max int64) ([]byte, error) {
	f, err := os.OpenFile(abs, os.O_RDONLY|oNoFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, max))
}

func joinRel(root, rel string) string { return root + string(os.PathSeparator) + rel }
