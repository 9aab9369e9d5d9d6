package workspace

import (
	"bufio"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// maxIgnoreFile bounds what one ignore file contributes: a repository's
// files are untrusted, and a huge one would slow every walk.
const maxIgnoreFile = 256 << 10

// ignoreFiles are read in every folder a walk enters, in this order: a later
// file's patterns win over an earlier one's, as ripgrep's .ignore wins over
// .gitignore.
var ignoreFiles = []string{".gitignore", ".ignore"}

// Walk visits the files and links below dir (a path inside the project) that
// the project's ignore files leave in, in lexical order, the way git and
// ripgrep see the tree: .gitignore files of every folder from the
// repository's top down (nested ones included), .ignore files, the
// repository's .git/info/exclude and the user's global excludes
// (core.excludesFile, else $XDG_CONFIG_HOME/git/ignore). Hidden files are
// visited; .git never is. Symlinks are visited as entries, never followed:
// fn decides what to do with one. fn gets the path under the project's root
// as the user named it, and the slash-separated path relative to the root.
// Unreadable folders are skipped; a cancelled ctx ends the walk with its
// error, as does any error fn returns (filepath.SkipDir skips the rest of
// the current folder).
func (p *Project) Walk(ctx context.Context, dir string, fn func(abs, rel string, d fs.DirEntry) error) error {
	return p.Files(ctx, dir, func(e Entry) error { return fn(e.Abs, e.Rel, e.DirEntry) })
}

// Entry is a file or link a walk (Project.Files) came to.
type Entry struct {
	fs.DirEntry
	Abs string // its path under the project's root as the user named it
	Rel string // its slash-separated path relative to the root
	dir *folder
}

// Open opens the entry for reading as Project.OpenFile does (inside the
// root, a regular file only, never blocking), relative to its folder,
// which the walk holds open: one open instead of one per folder of its
// path, never through a link. It may be called only while the walk's fn
// runs for the entry; the file is the caller's to read or close.
func (e Entry) Open() (*OpenedFile, error) {
	f, err := e.dir.open(e.Name())
	var nr *NotRegularError
	if errors.As(err, &nr) {
		nr.Path = e.Rel
	}
	return f, err
}

// Files is Walk, with each entry able to open itself (Entry.Open). The walk
// holds each folder it is in open (os.Root): the folders are entered, and
// their files opened, one name at a time, never through a symlink.
func (p *Project) Files(ctx context.Context, dir string, fn func(e Entry) error) error {
	root := p.WalkRoot()
	rel := p.Rel(dir)
	if rel == "." {
		rel = ""
	}
	top, prefix := repositoryTop(root)
	w := &walker{ctx: ctx, shown: p.Root(), fn: fn}
	ps := globalExcludes()
	ps = append(ps, readIgnore(filepath.Join(top, ".git", "info", "exclude"), nil)...)
	// The ignore files of every folder from the repository's top down to
	// the start's parent, so a walk of a subfolder leaves out what a walk of
	// the whole project would (the start's own are read by w.dir). The
	// project's root itself is walked even if the repository ignores it:
	// the user opened it.
	path := append(prefix[:len(prefix):len(prefix)], split(rel)...)
	d := top
	for i, name := range path {
		ps = append(ps, w.folderPatterns(d, path[:i])...)
		if i >= len(prefix) && gitignore.NewMatcher(ps).Match(path[:i+1], true) {
			return nil // the start is ignored
		}
		d = filepath.Join(d, name)
	}
	r, done, err := p.openRoot()
	if err != nil {
		return nil // an unreadable folder is skipped
	}
	start, err := r.OpenRoot(filepath.Join(".", filepath.FromSlash(rel)))
	done()
	if err != nil {
		return nil
	}
	defer start.Close()
	err = w.dir(start, filepath.Join(root, filepath.FromSlash(rel)), rel, path, ps)
	if errors.Is(err, filepath.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// walker holds what one walk needs besides the folder it is in.
type walker struct {
	ctx   context.Context
	shown string // the project's root as the user named it: what fn gets
	fn    func(e Entry) error
}

// dir visits the folder r at abs (rel below the root; path below the
// repository's top), whose ancestors' patterns are ps.
func (w *walker) dir(r *os.Root, abs, rel string, path []string, ps []gitignore.Pattern) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	here, entries, err := listFolder(r)
	if err != nil {
		return nil // unreadable folders are skipped, as before
	}
	defer here.close()
	for _, name := range ignoreFiles {
		// Only a folder that lists an ignore file has one to read.
		if _, ok := slices.BinarySearchFunc(entries, name, func(d fs.DirEntry, name string) int { return strings.Compare(d.Name(), name) }); ok {
			ps = append(ps[:len(ps):len(ps)], readIgnore(filepath.Join(abs, name), path)...)
		}
	}
	m := gitignore.NewMatcher(ps)
	for _, d := range entries {
		name := d.Name()
		if name == ".git" {
			continue
		}
		childPath := append(path[:len(path):len(path)], name)
		isDir := d.IsDir()
		if m.Match(childPath, isDir) {
			continue
		}
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		if isDir {
			sub, err := r.OpenRoot(name)
			if err != nil {
				continue // unreadable, or no longer a folder
			}
			err = w.dir(sub, filepath.Join(abs, name), childRel, childPath, ps)
			sub.Close()
			if err != nil {
				if errors.Is(err, filepath.SkipDir) {
					continue
				}
				return err
			}
			continue
		}
		if err := w.fn(Entry{DirEntry: d, Abs: filepath.Join(w.shown, filepath.FromSlash(childRel)), Rel: childRel, dir: here}); err != nil {
			if errors.Is(err, filepath.SkipDir) {
				return nil
			}
			return err
		}
	}
	return nil
}

// sortEntries sorts a folder's entries by name.
func sortEntries(entries []fs.DirEntry) {
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
}

// folderPatterns reads the ignore files of the folder at abs, whose path
// below the repository's top is path.
func (w *walker) folderPatterns(abs string, path []string) []gitignore.Pattern {
	var ps []gitignore.Pattern
	for _, name := range ignoreFiles {
		ps = append(ps, readIgnore(filepath.Join(abs, name), path)...)
	}
	return ps
}

// readIgnore parses the ignore file at name, whose patterns apply below the
// folder path (below the repository's top); nil when it cannot be read. Only
// a regular file is read, never through a symlink, and at most
// maxIgnoreFile bytes of it.
func readIgnore(name string, path []string) []gitignore.Pattern {
	// As git does (2.32 and later), a symlink is not followed; a FIFO is
	// opened without blocking and then refused as not regular.
	if fi, err := os.Lstat(name); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(io.LimitReader(f, maxIgnoreFile))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(unescape(line), path))
	}
	return ps
}

// unescape rewrites a gitignore line's backslash escapes into forms that
// mean the same to filepath.Match on every platform: go-git matches with
// filepath.Match, which on Windows takes '\' as a path separator, never as
// an escape, so `\#notes` or `a\*b` would match nothing there. Outside a
// bracket expression, an escaped '*', '?', '[', '!' or space becomes a
// one-letter class ("[*]"; "[!]" so that it does not start an exception,
// "[ ]" so that a trailing escaped space is kept), an escaped backslash stays
// escaped (names on Windows hold none), and any other escaped character is
// itself. Inside brackets the line is left as written.
func unescape(line string) string {
	if !strings.Contains(line, "\\") {
		return line
	}
	var b strings.Builder
	class := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case class:
			class = c != ']'
		case c == '[':
			class = true
		case c == '\\' && i+1 < len(line):
			i++
			switch n := line[i]; n {
			case '*', '?', '[', ' ', '!':
				b.WriteByte('[')
				b.WriteByte(n)
				c = ']'
			case '\\':
				b.WriteByte('\\')
				c = n
			default:
				c = n
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// globalExcludes are the user's own excludes, as git reads them: the file
// core.excludesFile names in the user's or the system's git configuration,
// else $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore).
func globalExcludes() []gitignore.Pattern {
	fsys := osfs.New("/")
	if ps, err := gitignore.LoadGlobalPatterns(fsys); err == nil && len(ps) > 0 {
		return ps
	}
	if ps, err := gitignore.LoadSystemPatterns(fsys); err == nil && len(ps) > 0 {
		return ps
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(home, ".config")
	}
	return readIgnore(filepath.Join(dir, "git", "ignore"), nil)
}

// repositoryTop finds the top of the git repository root is in (the nearest
// folder at or above it holding .git) and root's path below it; root itself
// and no prefix when root is in no repository.
func repositoryTop(root string) (string, []string) {
	for d := root; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			rel, err := filepath.Rel(d, root)
			if err != nil {
				return root, nil
			}
			return d, split(filepath.ToSlash(rel))
		}
		up := filepath.Dir(d)
		if up == d {
			return root, nil
		}
		d = up
	}
}

// split cuts a slash path into its names; none for "" and ".".
func split(rel string) []string {
	if rel == "" || rel == "." {
		return nil
	}
	return strings.Split(rel, "/")
}
