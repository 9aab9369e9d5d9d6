package sandbox

import (
	"container/list"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agent-lsp/agent-lsp/workspace"
)

// Bounds of a project's scan: past them the scan stops, and what lies
// beyond is not protected (the scan says so).
const (
	maxScanDirs    = 20000  // directories visited
	maxScanEntries = 400000 // directory entries read
	maxIndexed     = 32     // projects whose scans are kept
	maxGitFile     = 4096   // bytes of a .git file or commondir read
)

// kind is what an entry of a scan is.
type kind uint8

const (
	gitDir        kind = iota + 1 // a repository's .git directory
	gitFile                       // a .git file naming a directory elsewhere (a worktree, a submodule)
	protectedDir                  // a protected directory (all of it)
	protectedFile                 // a protected file
	protectedLink                 // a symlink at a .git or protected path (a mount cannot cover it)
)

// entry is a .git or protected path of a project.
type entry struct {
	rel  string // slash-separated, relative to the root
	kind kind
	ino  uint64
	link string // a protectedLink's text
	// For a gitFile, and a gitDir with a commondir: the directories git
	// reads through it (absolute).
	targets []string
}

// dirRec is one directory of a scan: what it held when it was read, to
// read again only directories that changed (their mtime or inode moved).
type dirRec struct {
	ino     uint64
	mtime   int64 // ns
	racy    bool  // changed too close to the read to trust its mtime
	entries []entry
	subs    map[string]*dirRec
}

// scan is what a walk of a project found.
type scan struct {
	top       *dirRec
	truncated bool // a bound was hit: deeper paths were not looked at
}

// entries lists every entry of the scan, sorted by path.
func (sc *scan) entries() []entry {
	var out []entry
	var walk func(d *dirRec)
	walk = func(d *dirRec) {
		out = append(out, d.entries...)
		for _, s := range d.subs {
			walk(s)
		}
	}
	if sc.top != nil {
		walk(sc.top)
	}
	slices.SortFunc(out, func(a, b entry) int { return strings.Compare(a.rel, b.rel) })
	return out
}

// index keeps the scans of the projects commands ran in, the most recently
// used first, at most maxIndexed.
type index struct {
	mu    sync.Mutex               // guards order and byRoot (not the scans)
	order list.List                // of *indexed, most recent first
	byRt  map[string]*list.Element // root -> its element
}

// indexed is one project's scan; its lock serializes refreshes.
type indexed struct {
	root string
	mu   sync.Mutex // guards last
	last *scan
}

func (ix *index) get(root string) *indexed {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.byRt == nil {
		ix.byRt = map[string]*list.Element{}
	}
	if e, ok := ix.byRt[root]; ok {
		ix.order.MoveToFront(e)
		return e.Value.(*indexed)
	}
	it := &indexed{root: root}
	ix.byRt[root] = ix.order.PushFront(it)
	if ix.order.Len() > maxIndexed {
		old := ix.order.Back()
		ix.order.Remove(old)
		delete(ix.byRt, old.Value.(*indexed).root)
	}
	return it
}

// refresh scans root again, reading only directories that changed since
// the last scan, and returns the scan.
func (ix *index) refresh(root string) *scan {
	it := ix.get(root)
	it.mu.Lock()
	defer it.mu.Unlock()
	w := walker{root: root, now: time.Now(), maxDirs: maxScanDirs, maxEntries: maxScanEntries}
	var old *dirRec
	if it.last != nil {
		old = it.last.top
	}
	top := w.dir("", old)
	it.last = &scan{top: top, truncated: w.truncated}
	return it.last
}

// walker walks a project once, within the scan bounds.
type walker struct {
	root                string
	now                 time.Time
	maxDirs, maxEntries int
	dirs, read          int
	truncated           bool
}

// dir returns the record of the directory rel, reusing old where the
// directory did not change.
func (w *walker) dir(rel string, old *dirRec) *dirRec {
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	if err != nil || !fi.IsDir() {
		return nil
	}
	if w.dirs++; w.dirs > w.maxDirs {
		w.truncated = true
		return nil
	}
	mtime, ino := fi.ModTime().UnixNano(), inode(fi)
	if old != nil && !old.racy && old.ino == ino && old.mtime == mtime {
		rec := &dirRec{ino: old.ino, mtime: old.mtime, entries: w.recheck(old.entries), subs: map[string]*dirRec{}}
		for name, sub := range old.subs {
			if s := w.dir(path.Join(rel, name), sub); s != nil {
				rec.subs[name] = s
			}
		}
		return rec
	}
	rec := &dirRec{ino: ino, mtime: mtime, racy: w.now.Sub(time.Unix(0, mtime)) < 2*time.Second, subs: map[string]*dirRec{}}
	f, err := os.Open(abs)
	if err != nil {
		return rec
	}
	des, _ := f.ReadDir(-1)
	f.Close()
	if w.read += len(des); w.read > w.maxEntries {
		w.truncated = true
		return rec
	}
	for _, de := range des {
		name := de.Name()
		r := path.Join(rel, name)
		if e, ok := w.classify(r, name, de.Type()); ok {
			rec.entries = append(rec.entries, e)
			continue
		}
		if de.IsDir() && name != "node_modules" {
			var oldSub *dirRec
			if old != nil {
				oldSub = old.subs[name]
			}
			if s := w.dir(r, oldSub); s != nil {
				rec.subs[name] = s
			}
		}
	}
	return rec
}

// recheck refreshes the identity of entries of an unchanged directory (a
// protected directory may have been replaced by one of the same name in a
// subdirectory's rename, which changes the parent's mtime, but files can
// change in place).
func (w *walker) recheck(entries []entry) []entry {
	out := make([]entry, 0, len(entries))
	for _, e := range entries {
		name := path.Base(e.rel)
		fi, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(e.rel)))
		if err != nil {
			continue
		}
		if n, ok := w.classify(e.rel, name, fi.Mode().Type()); ok {
			out = append(out, n)
		}
	}
	return out
}

// classify says whether rel (whose base is name, of type typ) is a .git or
// protected entry, and makes it.
func (w *walker) classify(rel, name string, typ fs.FileMode) (entry, bool) {
	var k kind
	lower := strings.ToLower(name)
	switch {
	case linkLike(typ):
		if lower != ".git" && !protectedName(lower) {
			return entry{}, false
		}
		if _, ok := workspace.Match(workspace.ProtectedPaths, rel); !ok && lower != ".git" {
			if _, ok := workspace.Match(workspace.ProtectedPaths, rel+"/x"); !ok {
				return entry{}, false
			}
		}
		k = protectedLink
	case lower == ".git" && typ.IsDir():
		k = gitDir
	case lower == ".git" && typ.IsRegular():
		k = gitFile
	case !protectedName(lower):
		return entry{}, false
	case typ.IsDir():
		if _, ok := workspace.Match(workspace.ProtectedPaths, rel+"/x"); !ok {
			return entry{}, false
		}
		k = protectedDir
	case typ.IsRegular():
		if _, ok := workspace.Match(workspace.ProtectedPaths, rel); !ok {
			return entry{}, false
		}
		k = protectedFile
	default:
		return entry{}, false // a FIFO or a device: no program reads it as settings
	}
	abs := filepath.Join(w.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	if err != nil {
		return entry{}, false
	}
	e := entry{rel: rel, kind: k, ino: inode(fi)}
	switch k {
	case protectedLink:
		e.link, _ = os.Readlink(abs)
		// What it points at is what programs read through it: read-only
		// too (the link itself is put back if a command changes it).
		if target, err := filepath.EvalSymlinks(abs); err == nil && target != abs {
			e.targets = append(e.targets, target)
		} else if filepath.IsAbs(e.link) { // a Windows junction, which EvalSymlinks does not follow
			e.targets = append(e.targets, filepath.Clean(e.link))
		}
	case gitFile:
		if dir := gitdirOf(abs); dir != "" {
			e.targets = append(e.targets, dir)
			if c := commondirOf(dir); c != "" {
				e.targets = append(e.targets, c)
			}
		}
	case gitDir:
		if c := commondirOf(abs); c != "" {
			e.targets = append(e.targets, c)
		}
	}
	return e, true
}

// linkLike reports whether an entry of type typ leads elsewhere: a
// symlink, or (Windows) a junction or another name-surrogate reparse
// point, which Go reports as irregular and not a directory.
func linkLike(typ fs.FileMode) bool {
	return typ&fs.ModeSymlink != 0 || (typ&fs.ModeIrregular != 0 && !typ.IsDir())
}

// protectedNames are the names an entry of workspace.ProtectedPaths can end
// in (the last component of each pattern, or the one before a final "**"),
// lowercased; literal ones in a set, globs in a list. A name in neither is
// never protected, which spares the full match for almost every entry.
var protectedNames = func() (p struct {
	literal map[string]bool
	globs   []string
}) {
	p.literal = map[string]bool{}
	for _, r := range workspace.ProtectedPaths {
		parts := strings.Split(strings.ToLower(r.Pattern), "/")
		last := parts[len(parts)-1]
		if last == "**" && len(parts) > 1 {
			last = parts[len(parts)-2]
		}
		if strings.ContainsAny(last, "*?[\\") {
			p.globs = append(p.globs, last)
		} else {
			p.literal[last] = true
		}
	}
	return p
}()

// protectedName reports whether a file or directory named lower (already
// lowercased) may be protected, at any depth. The parent of a protected
// directory's pattern (".github" of ".github/workflows/**") is not: the walk
// descends into it.
func protectedName(lower string) bool {
	if protectedNames.literal[lower] {
		return true
	}
	for _, g := range protectedNames.globs {
		if ok, _ := path.Match(g, lower); ok {
			return true
		}
	}
	return false
}

// gitdirOf reads the .git file at abs ("gitdir: <dir>") and returns the
// directory it names, absolute; "" when it names none.
func gitdirOf(abs string) string {
	b := readSmall(abs)
	line, _, _ := strings.Cut(string(b), "\n")
	dir, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok || strings.TrimSpace(dir) == "" {
		return ""
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(abs), dir)
	}
	return filepath.Clean(dir)
}

// commondirOf returns the directory a git directory's commondir file names
// (a worktree's shared repository), absolute; "" when there is none.
func commondirOf(gitdir string) string {
	b := readSmall(filepath.Join(gitdir, "commondir"))
	dir := strings.TrimSpace(string(b))
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(gitdir, dir)
	}
	return filepath.Clean(dir)
}

// readSmall reads the head of a regular file, not following a final symlink.
func readSmall(abs string) []byte {
	f, err := os.OpenFile(abs, os.O_RDONLY|oNoFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	b := make([]byte, maxGitFile)
	n, _ := f.Read(b)
	return b[:n]
}

// binds are the mounts that make a scan's entries read-only for a command.
type binds struct {
	ro    []string // relative to the root
	roAbs []string // absolute, outside the root
	pins  []string // relative: directories bound onto themselves, so a command cannot rename them
}

// bindsFor returns the mounts for the entries of sc under p: every entry
// but symlinks (a mount follows them) and those inside a directory the user
// made writable (sandbox.writable naming a directory inside the project),
// the directories git reads through them, and the directories above each
// entry up to the root.
func bindsFor(sc *scan, p Policy) binds {
	var b binds
	pins := map[string]bool{}
	for _, e := range sc.entries() {
		if liftedByUser(p, e.rel) {
			continue
		}
		if e.kind != protectedLink { // a mount would follow the link
			b.ro = append(b.ro, e.rel)
		}
		for d := path.Dir(e.rel); d != "."; d = path.Dir(d) {
			pins[d] = true
		}
		for _, t := range e.targets {
			if rel, ok := inside(p.Root, t); ok {
				b.ro = append(b.ro, rel)
			} else {
				b.roAbs = append(b.roAbs, t)
			}
		}
	}
	for d := range pins {
		b.pins = append(b.pins, d)
	}
	// Shallow first: a pin must be in place before what lies below it.
	slices.SortFunc(b.pins, func(a, c string) int {
		return cmpInt(strings.Count(a, "/"), strings.Count(c, "/"), a, c)
	})
	slices.Sort(b.roAbs)
	b.roAbs = slices.Compact(b.roAbs)
	return b
}

func cmpInt(a, b int, sa, sb string) int {
	if a != b {
		return a - b
	}
	return strings.Compare(sa, sb)
}

// liftedByUser reports whether the user made rel writable: it lies in a
// directory of p.Writable that is inside the project (naming the project or
// a directory above it lifts nothing).
func liftedByUser(p Policy, rel string) bool {
	for _, w := range p.Writable {
		wr, ok := inside(p.Root, w)
		if ok && wr != "." && (rel == wr || strings.HasPrefix(rel, wr+"/")) {
			return true
		}
	}
	return false
}

// inside returns abs relative to root (slash-separated) when it lies in
// root.
func inside(root, abs string) (string, bool) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// gitSkip reports whether rel, inside a git directory, is data git alone
// writes and no program runs: objects (but objects/info, which can point
// git at other object stores), refs, logs, the index, packed refs and lock
// files. The rest (config, hooks, info, commondir, modules' and worktrees'
// metadata) is protected.
func gitSkip(base string, dir bool) bool {
	if dir {
		return base == "refs" || base == "logs" || base == "objects"
	}
	return base == "index" || base == "packed-refs" || strings.HasSuffix(base, ".lock")
}

// metadataFiles calls fn for every file and symlink of the protected parts
// of entries (each .git's metadata, each protected directory's
// files, each protected file), relative to the root, at most limit of them;
// it reports whether it stopped at the limit. It follows no symlink.
func metadataFiles(root string, entries []entry, p Policy, limit int, fn func(rel string, fi fs.FileInfo)) (cut bool) {
	n := 0
	visit := func(abs string, fi fs.FileInfo) bool {
		if n++; n > limit {
			return false
		}
		r, _ := filepath.Rel(root, abs)
		fn(filepath.ToSlash(r), fi)
		return true
	}
	var walk func(dir string, git bool) bool
	walk = func(dir string, git bool) bool {
		f, err := os.Open(dir)
		if err != nil {
			return true
		}
		des, _ := f.ReadDir(-1)
		f.Close()
		for _, de := range des {
			abs := filepath.Join(dir, de.Name())
			switch {
			case git && de.IsDir() && de.Name() == "objects":
				if !walk(filepath.Join(abs, "info"), false) {
					return false
				}
			case git && gitSkip(de.Name(), de.IsDir()):
			case de.IsDir():
				if !walk(abs, git) {
					return false
				}
			default:
				if fi, err := de.Info(); err == nil && !visit(abs, fi) {
					return false
				}
			}
		}
		return true
	}
	for _, e := range entries {
		if liftedByUser(p, e.rel) {
			continue
		}
		abs := filepath.Join(root, filepath.FromSlash(e.rel))
		switch e.kind {
		case gitDir, protectedDir:
			if !walk(abs, e.kind == gitDir) {
				return true
			}
		default:
			if fi, err := os.Lstat(abs); err == nil && !visit(abs, fi) {
				return true
			}
		}
	}
	return false
}

// hardLinks lists the regular files of the protected parts of sc with more
// than one link: a command could change them through another name, which
// neither a read-only mount nor a restore of the path sees.
func hardLinks(root string, sc *scan, p Policy) []string {
	var out []string
	metadataFiles(root, sc.entries(), p, maxSnapshotFiles, func(rel string, fi fs.FileInfo) {
		if fi.Mode().IsRegular() && nlinks(fi) > 1 {
			out = append(out, rel)
		}
	})
	return out
}
