package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// BoundaryError is returned when a path leaves its project.
type BoundaryError struct {
	Project string
	Path    string
	Reason  string
}

func (e *BoundaryError) Error() string {
	return fmt.Sprintf("path %q is outside project %q: %s", e.Path, e.Project, e.Reason)
}

// within reports whether path is root or below it; both must be clean.
// On Windows and macOS, whose file systems ignore case by default, the
// root's part of path may differ in case (respell gives root's spelling).
func within(root, path string) bool { return hostStyle().within(root, path) }

// pathStyle is how a platform spells and compares paths: its separator,
// and whether names that differ only in case are one name.
type pathStyle struct {
	sep  byte
	fold bool
}

// hostStyle is this platform's pathStyle.
func hostStyle() pathStyle {
	return pathStyle{sep: filepath.Separator, fold: runtime.GOOS == "windows" || runtime.GOOS == "darwin"}
}

// within reports whether the clean path is the clean root or below it.
func (s pathStyle) within(root, path string) bool {
	if len(path) < len(root) || root == "" {
		return false
	}
	if head := path[:len(root)]; head != root && !(s.fold && strings.EqualFold(head, root)) {
		return false
	}
	return len(path) == len(root) || root[len(root)-1] == s.sep || path[len(root)] == s.sep
}

// respell returns path, within root, with root's own spelling of its
// first part: what is written is then inside the root as the root is
// spelled, also on a volume that does tell case apart.
func (s pathStyle) respell(root, path string) (string, bool) {
	if !s.within(root, path) {
		return "", false
	}
	return root + path[len(root):], true
}

// below returns path relative to root when path is a clean path inside
// root other than root itself (what Resolve returns), without the two
// Cleans of filepath.Rel; ok is false for any other path.
func below(root, path string) (rel string, ok bool) {
	if path == root || !within(root, path) {
		return "", false
	}
	rel = strings.TrimPrefix(path[len(root):], string(filepath.Separator))
	// Clean leaves a clean relative path as it is, and also one that climbs
	// (../x), is absolute (/x: root//x) or is "." (root/.): none is below.
	up := rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
	rooted := filepath.IsAbs(rel) || strings.HasPrefix(rel, string(filepath.Separator)) // Windows: \x is rooted, not absolute
	return rel, !up && !rooted && filepath.Clean(rel) == rel
}

// Resolve returns the absolute path of path inside the project. It takes paths
// relative to the root and absolute paths inside it, and refuses `..` escapes,
// absolute paths outside, and symlinks at any component whose target leaves the
// root or does not exist. A path that does not exist yet is checked through its
// nearest existing parent. Decide answers the other questions about a path.
func (p *Project) Resolve(path string) (string, error) {
	abs, _, err := p.resolve(path)
	return abs, err
}

// resolve is the core of Resolve and Decide. abs is path made absolute and
// clean (what tools and editors are given, and what the kernel then
// resolves); real is abs as the kernel resolves it: its deepest existing
// ancestor with every symlink resolved, then the rest of abs, which does not
// exist and so holds no link. Both are inside the root (real inside the
// real root). It refuses a component that cannot be resolved (a link loop,
// no permission) and a dangling link: writing through one creates whatever
// it names, and a missing target is never checked.
func (p *Project) resolve(path string) (abs, real string, err error) {
	name, given := p.Name(), path
	refuse := func(reason string) (string, string, error) {
		return "", "", &BoundaryError{Project: name, Path: given, Reason: reason}
	}
	if path == "" {
		return refuse("empty path")
	}
	if strings.ContainsRune(path, 0) {
		return refuse("path contains a NUL byte")
	}
	if runtime.GOOS == "windows" {
		if why := windowsNameProblem(path[len(filepath.VolumeName(path)):]); why != "" {
			return refuse(why)
		}
		if filepath.VolumeName(path) == "" && (path[0] == '\\' || path[0] == '/') {
			// Rooted without a drive ("/etc/passwd"): on the root's drive, as Windows reads it.
			path = filepath.VolumeName(p.root) + path
		}
	}
	if filepath.IsAbs(path) {
		abs = filepath.Clean(path)
		if r, ok := hostStyle().respell(p.root, abs); ok {
			abs = r
		} else if r, ok := hostStyle().respell(p.realRoot, abs); ok {
			abs = r
		} else {
			return refuse("absolute path outside the project root " + p.root)
		}
	} else {
		abs = filepath.Join(p.root, path)
		if !within(p.root, abs) {
			return refuse("it climbs out of the project with ..")
		}
	}
	if real, ok := p.plainBelow(abs); ok {
		return abs, real, nil
	}
	// Find the nearest existing ancestor (or the path itself) and resolve its links.
	existing, rest := abs, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return refuse("cannot resolve it: " + cleanPathErr(err, p.root))
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return refuse("no existing parent")
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	resolved, err := filepath.EvalSymlinks(existing)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return refuse("a symlink on it points at nothing (a dangling link): writing through it would create what it names, unchecked")
	case err != nil:
		return refuse("cannot resolve symlink: " + cleanPathErr(err, p.root))
	case !within(p.realRoot, resolved):
		return refuse("a symlink points outside the project root")
	}
	return abs, filepath.Join(resolved, rest), nil
}

// cleanPathErr is err's text without the project root's path.
func cleanPathErr(err error, root string) string {
	return strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
}

// plainBelow returns abs as the kernel resolves it when abs, a clean path
// within the root (as given or resolved), leads to the project's own root
// folder and has no symlink among its components below it: the root path
// still names the folder the project was added with (not a link or folder
// put in its place since), and each component exists and is no link, until
// the first that does not exist. Then nothing in it can lead out of the root,
// it resolves to the same path below the real root, and resolve need not
// resolve links component by component from the file system's root (a system
// call each); ok false sends it to that full check.
func (p *Project) plainBelow(abs string) (real string, ok bool) {
	prefix := p.root
	if !within(prefix, abs) {
		prefix = p.realRoot
		if !within(prefix, abs) {
			return "", false
		}
	}
	if fi, err := os.Stat(prefix); err != nil || p.rootDir == nil || !os.SameFile(fi, p.rootDir) {
		return "", false
	}
	rel := strings.TrimPrefix(abs[len(prefix):], string(filepath.Separator))
	below := rel
	cur := strings.TrimSuffix(prefix, string(filepath.Separator)) // a root of "/" leaves ""
	for rel != "" {
		name, rest, _ := strings.Cut(rel, string(filepath.Separator))
		cur += string(filepath.Separator) + name // abs is clean: name is neither "" nor "." nor ".."
		fi, err := os.Lstat(cur)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				break
			}
			return "", false
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", false
		}
		rel = rest
	}
	return filepath.Join(p.realRoot, below), true
}

// Rel returns path relative to the project root, with forward slashes.
func (p *Project) Rel(path string) string {
	if r, ok := below(p.root, path); ok {
		return filepath.ToSlash(r)
	}
	r, err := filepath.Rel(p.root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(r)
}
